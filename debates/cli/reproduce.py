"""``m3d reproduce``: run every row of a paper's table as an ``m3d evaluate`` run, then print ours beside the paper's."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from debates.cli.common import ProgressBar, console, err_console, evidence_store_option, fail, retrieval_option, run_cli, written_path
from debates.cli.tables import print_fitting, print_note, print_warnings
from debates.cli.evaluate import _rate_limits, checked_sample, max_worker_deaths_option, ray_address_option, sample_option, workers_option
from m3d_agents.config_types import SEED_MAX


def list_tables() -> None:
    """One entry per table: its id, the paper's table, the data sets, what it shows, and the configurations it runs."""
    from debates.eval.papers.paper_tables import all_tables, missing_configs
    from debates.config_loader import available_configs

    for t in all_tables():
        missing = missing_configs(t, available_configs())
        unread = t.without_loader()
        datasets = ", ".join(f"{kind} (no loader here)" if kind in unread else kind for kind in t.datasets)
        console.print(f"[bold]{t.id}[/]  {t.paper} {t.citation.table} on {datasets}: {t.title}",
                      highlight=False, soft_wrap=True)
        line = f"    {len(t.rows)} rows; runs {', '.join(t.configs()) or 'nothing'}"
        if missing:
            line += f" [yellow](this build lacks {', '.join(missing)})[/]"
        console.print(line, highlight=False, soft_wrap=True)
    console.print("[dim]m3d reproduce TABLE --dataset KIND:PATH --backend NAME --out DIR runs one[/]")


def print_table(result: Any) -> None:
    from debates.eval.papers.table_report import cells, columns

    for line in result.header:
        console.print(line, markup=False, highlight=False, soft_wrap=True)
    print_fitting(columns(result), cells(result))


def reproduce(
    table: Optional[str] = typer.Argument(None, help="The table to reproduce (see --list)."),
    list_: bool = typer.Option(False, "--list", help="List the tables and exit."),
    plan: bool = typer.Option(False, "--plan", help="Print what would run (rows, configurations, backends, tool backends, "
                              "call budgets) and every departure from the paper already visible, without calling anything."),
    dataset: Optional[str] = typer.Option(None, "--dataset", help="KIND:PATH of the data set, e.g. mmfakebench:MMFakeBench_val.json"),
    dataset_option: list[str] = typer.Option([], "--dataset-option", "-o", help="key=value for the loader; repeat."),
    backend: Optional[str] = typer.Option(None, "--backend", help="Backend for every seat of every row (see m3d backends)."),
    out: Optional[Path] = typer.Option(None, "--out", parser=written_path, help="Folder of the table: one run folder per configuration, then table.md, table.json, table.png."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Use N samples (which ones: --sample; the table then says it is a subset)."),
    sample: str = sample_option(),
    concurrency: int = typer.Option(4, "--concurrency", min=1, help="Samples in flight at once, per row (with --workers, in all workers together)."),
    config_file: Optional[Path] = typer.Option(None, "--config-file", help="YAML file with named backends."),
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX, help="Run seed, as m3d evaluate's."),
    rate_limit: list[str] = typer.Option([], "--rate-limit", help="NAME=RPM: requests per minute for a backend; repeat."),
    prices: Optional[Path] = typer.Option(None, "--prices", help="YAML of model prices per 1M tokens."),
    rerun_errors: bool = typer.Option(False, "--rerun-errors", help="Run failed samples of an earlier attempt again."),
    retrieval: Optional[str] = retrieval_option(),
    evidence_store: Optional[Path] = evidence_store_option(),
    workers: Optional[int] = workers_option(),
    ray_address: Optional[str] = ray_address_option(),
    max_worker_deaths: int = max_worker_deaths_option(),
    resamples: int = typer.Option(2000, "--resamples", min=100, help="Bootstrap resamples for the 95% intervals."),
    bootstrap_seed: int = typer.Option(0, "--bootstrap-seed", min=0, max=SEED_MAX, help="Seed of the bootstrap."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show the progress bars."),
) -> None:
    """Reproduce a paper's table: every row runs as an m3d evaluate run under --out (rerun to resume),
    then the table prints our figures with 95% intervals beside the paper's."""
    if list_:
        list_tables()
        return
    if plan:
        if table is None:
            fail("reproduce --plan: give TABLE (or --list to see the tables)")
        from debates.eval.papers.plan import PlanRequest, plan_lines, plan_table

        assert table is not None
        for line in plan_lines(plan_table(PlanRequest(table=table, backend=backend, config_file=config_file,
                                                      retrieval=retrieval))):
            console.print(line, markup=False, highlight=False, soft_wrap=True)
        return
    missing = [name for name, value in (("TABLE", table), ("--dataset", dataset), ("--backend", backend), ("--out", out))
               if value is None]
    if missing:
        fail(f"reproduce: give {', '.join(missing)} (or --list to see the tables)")
    from m3d_agents.datasets import parse_option_pairs
    from debates.eval.papers.reproduce import ReproduceOutcome, ReproduceRequest, check_reproduction
    from debates.eval.papers.reproduce import reproduce as run_table
    from debates.eval.papers.table_report import write_table
    from debates.eval.run.evaluate import EvaluateRequest

    assert table is not None and dataset is not None and backend is not None and out is not None

    async def main() -> ReproduceOutcome:
        evaluation = EvaluateRequest(
            config="", dataset=dataset, backend=backend, out=out, dataset_options=parse_option_pairs(dataset_option),
            limit=limit, sample=checked_sample(sample), concurrency=concurrency, config_file=config_file, seed=seed,
            rate_limits=_rate_limits(rate_limit), prices=prices, rerun_errors=rerun_errors, retrieval=retrieval,
            evidence_store=evidence_store, workers=workers, ray_address=ray_address, max_worker_deaths=max_worker_deaths,
        )
        request = ReproduceRequest(table=table, evaluation=evaluation, resamples=resamples, bootstrap_seed=bootstrap_seed)
        checked = check_reproduction(request)
        err_console.print(f"[dim]{checked.table.id}: {len(checked.runs)} configuration(s) to run into {out}/<configuration>[/]")
        with ProgressBar(progress) as bar:
            return await run_table(checked, progress=bar, note=print_note)

    outcome = run_cli(main())
    print_warnings(outcome.left_out)
    for config, deaths in outcome.worker_deaths.items():
        err_console.print(f"[yellow]{config}: {deaths}[/]")
    if outcome.interrupted or outcome.result is None:
        err_console.print("[yellow]interrupted: finished samples are saved in each row's run folder; "
                          "rerun the same command to resume[/]")
        raise typer.Exit(130)
    written = write_table(outcome.result, out)
    print_table(outcome.result)
    console.print(f"[dim]ran this time: {', '.join(f'{c} {n}' for c, n in outcome.ran.items())} samples; "
                  f"wrote {', '.join(str(p) for p in written)}[/]")
