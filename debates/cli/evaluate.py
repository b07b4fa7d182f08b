"""``m3d evaluate`` and ``m3d compare``: batch runs over a data set, and their comparison."""

from __future__ import annotations

import os
from functools import partial
from pathlib import Path
from typing import Any, Optional

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from debates.strategy import available_configs
from debates.cli.common import console, err_console, evidence_store_option, fail, retrieval_option, run_cli


def _rate_limits(pairs: list[str]) -> dict[str, float]:
    from m3d_agents.errors import InputError

    limits = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        try:
            rpm = float(value)
        except ValueError:
            rpm = -1.0
        if not sep or rpm <= 0:
            raise InputError("rate-limit", f"{pair!r} is not NAME=REQUESTS_PER_MINUTE with a positive number")
        limits[name.strip()] = rpm
    return limits


def run_costs_line(rows: list[Any]) -> str:
    """What the run's samples cost in model calls that reached a model and in network fetches for evidence."""
    calls = sum(r.model_calls for r in rows)
    cached = sum(r.cache_hits for r in rows)
    fetches = sum(((r.verdict or {}).get("evidence_report") or {}).get("network_fetches", 0) for r in rows)
    modes = sorted({str(((r.verdict or {}).get("evidence_report") or {}).get("mode", "none")) for r in rows})
    return (f"model calls: {calls - cached} reached a model, {cached} answered from the response cache; "
            f"network fetches for evidence: {fetches} (retrieval {', '.join(modes) or 'none'})")


def evaluate(
    config: str = typer.Option(..., "--config", help=f"Configuration to run. Built in: {', '.join(available_configs())}."),
    dataset: str = typer.Option(..., "--dataset", help="KIND:PATH, e.g. mediaeval:../shared/data/mediaeval2016-dev"),
    dataset_option: list[str] = typer.Option([], "--dataset-option", "-o", help="key=value for the loader; repeat."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Use the first N samples of the data set."),
    concurrency: int = typer.Option(4, "--concurrency", min=1, help="Samples in flight at once (with --workers, in all workers together)."),
    out: Optional[Path] = typer.Option(None, "--out", help="Run folder; default runs/<config>-<dataset kind>-<backend>."),
    backend: Optional[str] = typer.Option(None, "--backend", help="Backend for every seat (default: the configuration's own)."),
    config_file: Optional[Path] = typer.Option(None, "--config-file", help="YAML file with named backends."),
    seed: int = typer.Option(0, "--seed", help="Run seed; each sample's seed derives from it and the sample id."),
    rate_limit: list[str] = typer.Option([], "--rate-limit", help="NAME=RPM: requests per minute for a backend; repeat."),
    prices: Optional[Path] = typer.Option(None, "--prices", help="YAML of model prices per 1M tokens, added to the built-in table."),
    retry_errors: bool = typer.Option(False, "--retry-errors", help="Run failed samples of an earlier attempt again."),
    progress: bool = typer.Option(True, "--progress/--no-progress", help="Show the progress bar."),
    retrieval: Optional[str] = retrieval_option(),
    evidence_store: Optional[Path] = evidence_store_option(),
    record_trajectories: bool = typer.Option(
        False, "--record-trajectories", help="Also write every model call to trajectories.jsonl (for m3d export-sft)."
    ),
    workers: Optional[int] = typer.Option(None, "--workers", min=1, help="Run samples on this many Ray worker processes "
                                          "(a local Ray cluster is started for the run unless --ray-address is given)."),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help="Run on this existing Ray cluster (e.g. ray://head:10001 "
                                              "or auto); workers default to one per CPU of the cluster."),
    max_tries: int = typer.Option(3, "--max-tries", min=1, help="With Ray: a sample that kills its worker this many times "
                                  "is recorded as an error."),
) -> None:
    """Run a configuration over a data set; rerun the same command to resume an interrupted run."""
    from m3d_agents.datasets import load_dataset, parse_option_pairs, parse_spec
    from debates.eval.batch import BatchOutcome, BatchRunner, RunManifest, Tally, check_run_dir
    from debates.eval.prices import load_price_table
    from debates.eval.ratelimit import RateLimitedPool
    from debates.eval.report import write_report
    from debates.strategy import load_config
    from m3d_agents.backends.config import load_backend_settings, resolve_backend_name
    from retrieval.runpath import open_retrieval, parse_mode

    if config not in available_configs():
        fail(f"config: unknown configuration {config!r}; available: {', '.join(available_configs())}")

    async def main() -> BatchOutcome:
        # Every option is checked before the data set is read, so a mistake costs no wait and
        # gets one line.
        kind, _ = parse_spec(dataset)
        options = parse_option_pairs(dataset_option)
        rate_limits = _rate_limits(rate_limit)
        price_table = load_price_table(prices)
        settings = load_backend_settings(config_file)
        override = backend or os.environ.get("M3D_BACKEND")
        backend_name = resolve_backend_name(backend, settings)
        settings.get(backend_name)
        run_dir = out or Path("runs") / f"{config}-{kind}-{backend_name}"
        check_run_dir(run_dir)
        mode = parse_mode(retrieval)
        loaded = load_dataset(dataset, options)
        samples = loaded.samples[:limit] if limit else loaded.samples
        if not samples:
            fail(f"dataset: the data set gave no samples ({loaded.report.skipped_total} rows left out: {loaded.report.skipped})")
        skipped = loaded.report.skipped_total
        err_console.print(f"[dim]{len(samples)} samples from {dataset}" + (f"; loader left out {skipped} rows" if skipped else "") + "[/]")
        pool = RateLimitedPool(settings, rate_limits=rate_limits)
        sources = open_retrieval(load_config(config), pool, mode=mode, store_path=evidence_store, backend=override)
        manifest = RunManifest(config=config, dataset=dataset, dataset_options=options, backend=backend_name, seed=seed,
                               taxonomy=samples[0].taxonomy, load_report=loaded.report, retrieval=sources.mode)
        bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                       TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.fields[stats]}"),
                       console=err_console, disable=not progress)
        task = bar.add_task(config, total=len(samples), stats="")

        def show(tally: Tally) -> None:
            bar.update(task, completed=tally.done, stats=tally.line())

        recorder = None
        if record_trajectories:
            from debates.training.trajectories import TrajectoryRecorder

            recorder = TrajectoryRecorder(run_dir)
        run_options: dict[str, Any] = dict(concurrency=concurrency, backend=override, prices=price_table,
                                           retry_errors=retry_errors, on_progress=show, recorder=recorder,
                                           gold_evidence=loaded.gold_evidence)
        if workers is not None or ray_address is not None:
            from debates.eval.ray_runner import RayBatchRunner

            # Each worker opens the run's evidence sources itself, on its own backend pool.
            opener = partial(open_retrieval, load_config(config), mode=sources.mode,
                             store_path=evidence_store.resolve() if evidence_store else None, backend=override)
            runner: BatchRunner = RayBatchRunner(config, samples, pool, run_dir, manifest, workers=workers, address=ray_address,
                                                 max_tries=max_tries, worker_context=opener, **run_options)
        else:
            runner = BatchRunner(config, samples, pool, run_dir, manifest, context_options=sources.context_options(),
                                 **run_options)
        try:
            with bar:
                return await runner.run()
        finally:
            await sources.close()
            await pool.close()

    outcome = run_cli(main())
    deaths = getattr(outcome, "worker_deaths", 0)
    if deaths:
        given_up = getattr(outcome, "given_up", [])
        err_console.print(f"[yellow]{deaths} Ray worker(s) died; their samples ran again on other workers"
                          + (f"; {len(given_up)} that kept killing workers are recorded as errors" if given_up else "") + "[/]")
    if outcome.repaired_torn_line:
        err_console.print("[yellow]cut off a torn last line left by an earlier hard stop[/]")
    summary = write_report(outcome.out_dir)
    m = summary.metrics
    accuracy = f"{m.classification.accuracy:.3f}" if m.classification else "n/a"
    macro = f"{m.classification.macro_f1:.3f}" if m.classification else "n/a"
    cited = f", citation_validity {m.citation_validity:.3f} of {m.cited_ids} cited ids" if m.citation_validity is not None else ""
    console.print(
        f"{outcome.out_dir}: {len(outcome.rows)}/{outcome.total} samples done ({outcome.ran} this time), "
        f"accuracy {accuracy}, macro-F1 {macro}, abstained {m.abstained}, errors {m.errors}{cited}; report in "
        f"{outcome.out_dir / 'report.md'}"
    )
    console.print(run_costs_line(outcome.rows))
    if outcome.interrupted:
        err_console.print("[yellow]interrupted: finished rows are saved; rerun the same command to resume[/]")
        raise typer.Exit(130)
