"""``m3d evaluate`` and ``m3d compare``: batch runs over a data set, and their comparison."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from debates.config_loader import available_configs
from debates.cli.common import ProgressBar, console, err_console, evidence_store_option, fail, retrieval_option, run_cli, written_path
from debates.cli.tables import print_caveats, print_note, print_warnings

if TYPE_CHECKING:
    from m3d_agents.datasets.subsets import SampleChoice
from m3d_agents.config_types import SEED_MAX


def _rate_limits(pairs: list[str]) -> dict[str, float]:
    from debates.eval.run.ratelimit import rate_limit_problem
    from m3d_agents.errors import InputError

    limits = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        try:
            rpm = float(value)
        except ValueError:
            rpm = -1.0
        if not sep or not name.strip() or not rpm > 0:
            raise InputError("rate-limit", f"{pair!r} is not NAME=REQUESTS_PER_MINUTE with a positive number")
        problem = rate_limit_problem(rpm)
        if problem:
            raise InputError("rate-limit", f"{pair!r}: {problem}")
        limits[name.strip()] = rpm
    return limits


def sample_option() -> Any:
    return typer.Option("first", "--sample", metavar="first|random|balanced", help="With --limit N, which N: the first "
                        "rows, N drawn at random, or N balanced across the gold labels (the first rows of a data set are "
                        "often one class); random and balanced are seeded by --seed.")


def checked_sample(value: str) -> SampleChoice:
    """``--sample`` as one of its choices, or one error line naming them."""
    from m3d_agents.datasets.subsets import SAMPLE_CHOICES
    from m3d_agents.errors import InputError

    for choice in SAMPLE_CHOICES:
        if value == choice:
            return choice
    raise InputError("sample", f"{value!r} is not one of {', '.join(SAMPLE_CHOICES)}")


def workers_option() -> Any:
    return typer.Option(None, "--workers", min=1, help="Run samples on this many Ray worker processes "
                        "(a local Ray cluster is started for the run unless --ray-address is given).")


def ray_address_option() -> Any:
    return typer.Option(None, "--ray-address", help="Run on this existing Ray cluster (e.g. ray://head:10001 "
                        "or auto); workers default to one per CPU of the cluster.")


def max_worker_deaths_option() -> Any:
    return typer.Option(3, "--max-worker-deaths", min=1, help="With Ray: a sample that kills its worker this many times "
                        "is recorded as an error.")


def evaluate(
    config: str = typer.Option(..., "--config", help=f"Configuration to run: a built-in name or a YAML file. Built in: {', '.join(available_configs())}."),
    dataset: str = typer.Option(..., "--dataset", help="KIND:PATH, e.g. mediaeval:../shared/data/mediaeval2016-dev"),
    dataset_option: list[str] = typer.Option([], "--dataset-option", "-o", help="key=value for the loader; repeat."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Use N samples of the data set (which ones: --sample)."),
    sample: str = sample_option(),
    concurrency: int = typer.Option(4, "--concurrency", min=1, help="Samples in flight at once (with --workers, in all workers together)."),
    out: Optional[Path] = typer.Option(None, "--out", parser=written_path, help="Run folder; default runs/<config name or file stem>-<dataset kind>-<backend>."),
    backend: Optional[str] = typer.Option(None, "--backend", help="Backend for every seat (default: the configuration's own)."),
    config_file: Optional[Path] = typer.Option(None, "--config-file", help="YAML file with named backends."),
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX, help="Run seed; each sample's seed derives from it and the sample id."),
    rate_limit: list[str] = typer.Option([], "--rate-limit", help="NAME=RPM: requests per minute for a backend; repeat."),
    prices: Optional[Path] = typer.Option(None, "--prices", help="YAML of model prices per 1M tokens, added to the built-in table."),
    rerun_errors: bool = typer.Option(False, "--rerun-errors", help="Run failed samples of an earlier attempt again."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show the progress bar."),
    retrieval: Optional[str] = retrieval_option(),
    evidence_store: Optional[Path] = evidence_store_option(),
    record_trajectories: bool = typer.Option(
        False, "--record-trajectories", help="Also write every model call to trajectories.jsonl (for m3d export-sft)."
    ),
    workers: Optional[int] = workers_option(),
    ray_address: Optional[str] = ray_address_option(),
    max_worker_deaths: int = max_worker_deaths_option(),
) -> None:
    """Run a configuration over a data set; rerun the same command to resume an interrupted run."""
    from m3d_agents.datasets import parse_option_pairs
    from debates.eval.run.evaluate import EvaluateRequest, check_request, run_costs_line, run_evaluation, worker_deaths_line

    async def main() -> Any:
        request = EvaluateRequest(
            config=config, dataset=dataset, dataset_options=parse_option_pairs(dataset_option), limit=limit, sample=checked_sample(sample),
            concurrency=concurrency, out=out, backend=backend, config_file=config_file, seed=seed,
            rate_limits=_rate_limits(rate_limit), prices=prices, rerun_errors=rerun_errors, retrieval=retrieval,
            evidence_store=evidence_store, record_trajectories=record_trajectories, workers=workers, ray_address=ray_address,
            max_worker_deaths=max_worker_deaths,
        )
        checked = check_request(request)
        with ProgressBar(progress) as bar:
            return await run_evaluation(checked, progress=bar, note=print_note)

    result = run_cli(main())
    outcome = result.outcome
    deaths = worker_deaths_line(outcome)
    if deaths:
        err_console.print(f"[yellow]{deaths}[/]")
    if outcome.repaired_torn_line:
        err_console.print("[yellow]cut off a torn last line left by an earlier hard stop[/]")
    m = result.summary.metrics
    accuracy = f"{m.classification.accuracy:.3f}" if m.classification else "n/a"
    macro = f"{m.classification.macro_f1:.3f}" if m.classification else "n/a"
    cited = f", citation_validity {m.citation_validity:.3f} of {m.cited_ids} cited ids" if m.citation_validity is not None else ""
    console.print(
        f"{outcome.out_dir}: {len(outcome.rows)}/{outcome.total} samples done ({outcome.ran} this time), "
        f"accuracy {accuracy}, macro-F1 {macro}, abstained {m.abstained}, errors {m.errors}{cited}; report in "
        f"{outcome.out_dir / 'report.md'}", soft_wrap=not console.is_terminal,
    )
    console.print(run_costs_line(outcome.rows), soft_wrap=not console.is_terminal)
    print_warnings(result.summary.left_out)
    print_caveats(result.summary.caveats)
    if m.escalation is not None:
        console.print(m.escalation.line())
    departures = result.summary.manifest.departures
    if departures:
        console.print(f"departures from the paper ({len(departures)}; also in report.md and run.json):", highlight=False)
        for departure in departures:
            console.print(f"  {departure.line()}", markup=False, highlight=False, soft_wrap=True)
    failed = [r for r in outcome.rows if r.status == "error"]
    if outcome.ran and outcome.rows and len(failed) == len(outcome.rows):
        first = failed[0].error
        why = f"{first.type}: {first.message[:300]}" if first is not None else "unknown"
        fail(f"every sample failed ({len(failed)} of {len(outcome.rows)}), the first with {why}; the rows are saved, "
             "and --rerun-errors runs them again once the cause is fixed", code=1)
    if outcome.interrupted:
        err_console.print("[yellow]interrupted: finished rows are saved; rerun the same command to resume[/]")
        raise typer.Exit(130)
