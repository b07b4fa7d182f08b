"""One evaluation run: a configuration over a data set into a resumable run folder, then its report.

``m3d evaluate`` runs one of these; ``m3d reproduce`` runs one per row of a paper's table. Both go
through :func:`run_evaluation`, so a row of a reproduced table is exactly the run that
``m3d evaluate`` with the same options would have made, in the same folder layout, and either
command resumes the other's interrupted run.

Every option is checked (:func:`check_request`) before the data set is read, so a mistake costs
no wait; a data set loaded once can be handed to several runs.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol

from debates.eval.run.batch import BatchOutcome, BatchRunner, Tally, check_run_dir
from debates.eval.records import MANIFEST, RunManifest
from debates.eval.score.departures import PlannedRun, asks_for_evidence, combined, planned_departures, row_departures, run_shares
from debates.fidelity import StatedDeparture
from debates.eval.score.prices import PriceTable, load_price_table
from debates.eval.run.ratelimit import RateLimitedPool, rate_limit_problem
from debates.eval.score.report import RunSummary, write_report
from debates.strategy import StrategyConfig
from debates.config_loader import load_config
from debates.session import RunSession
from m3d_agents.backends.config import BackendSettings, load_backend_settings, resolve_backend_name
from m3d_agents.backends.transports.outage import notes_to
from m3d_agents.config_types import SEED_MAX
from m3d_agents.datasets import LoadedDataset, load_dataset, parse_spec
from m3d_agents.datasets.subsets import SAMPLE_CHOICES, SampleChoice, Subset
from m3d_agents.errors import InputError
from m3d_agents.evidence import Evidence
from m3d_agents.safe_files import OwnedFolder
from m3d_agents.sample import Sample
from m3d_agents.verdict import RetrievalMode

@dataclass
class EvaluateRequest:
    """The options of one run, as ``m3d evaluate`` takes them."""

    config: str
    """A built-in configuration's name, or the path of a configuration's YAML file."""
    dataset: str
    dataset_options: dict[str, str] = field(default_factory=dict)
    limit: int | None = None
    sample: SampleChoice = "first"
    """Which ``limit`` samples: the first, drawn at random, or balanced across the gold labels (seeded by ``seed``)."""
    concurrency: int = 4
    out: Path | None = None
    backend: str | None = None
    config_file: Path | None = None
    seed: int = 0
    rate_limits: dict[str, float] = field(default_factory=dict)
    prices: Path | None = None
    rerun_errors: bool = False
    retrieval: str | None = None
    evidence_store: Path | None = None
    record_trajectories: bool = False
    workers: int | None = None
    ray_address: str | None = None
    max_worker_deaths: int = 3


@dataclass
class CheckedRequest:
    """A request whose options all hold, with what checking them produced."""

    request: EvaluateRequest
    kind: str
    settings: BackendSettings
    backend_name: str
    override: str | None
    run_dir: Path
    mode: RetrievalMode | None
    price_table: PriceTable
    strategy: StrategyConfig
    """The configuration, loaded once: Ray workers receive it as it is, so a YAML file need not exist on their nodes."""
    config_label: str
    """How the run folder, its manifest and its rows name the configuration: a built-in's name, a file's absolute path."""
    departures: list[StatedDeparture] = field(default_factory=list)
    """How the run will depart from the configuration's paper, as far as is known before it starts."""


@dataclass
class EvaluateResult:
    outcome: BatchOutcome
    summary: RunSummary
    samples: list[Sample]
    """The samples this run was asked for (after ``limit``); the folder may hold rows of others."""


class RunProgress(Protocol):
    """Where a run reports its progress (the command line draws a bar)."""

    def start(self, name: str, total: int) -> None: ...

    def update(self, tally: Tally) -> None: ...


def on_ray(workers: int | None, ray_address: str | None) -> bool:
    """A run on Ray workers: any number of workers, or a cluster named (as ``m3d evaluate`` takes them)."""
    return workers is not None or ray_address is not None


def check_request(request: EvaluateRequest) -> CheckedRequest:
    """Every option of ``request``, checked without reading the data set; one error naming the first bad one."""
    from retrieval.runpath import parse_mode

    strategy = load_config(request.config)
    is_file = Path(request.config).suffix in (".yaml", ".yml")
    config_label = str(Path(request.config).resolve()) if is_file else request.config
    if request.concurrency < 1:
        raise InputError("concurrency", "must be at least 1")
    if request.limit is not None and request.limit < 1:
        raise InputError("limit", "must be at least 1")
    if request.sample not in SAMPLE_CHOICES:
        raise InputError("sample", f"{request.sample!r} is not one of {', '.join(SAMPLE_CHOICES)}")
    if request.workers is not None and request.workers < 1:
        raise InputError("workers", "must be at least 1")
    if request.max_worker_deaths < 1:
        raise InputError("max-worker-deaths", "must be at least 1")
    if not 0 <= request.seed <= SEED_MAX:
        raise InputError("seed", f"must be between 0 and {SEED_MAX}")
    kind, _ = parse_spec(request.dataset)
    for name, rpm in request.rate_limits.items():
        problem = rate_limit_problem(rpm)
        if problem:
            raise InputError("rate-limit", f"{name}={rpm}: {problem}")
    price_table = load_price_table(request.prices)
    settings = load_backend_settings(request.config_file)
    override = request.backend or os.environ.get("M3D_BACKEND")
    backend_name = resolve_backend_name(request.backend, settings)
    settings.get(backend_name)
    unknown = sorted(set(request.rate_limits) - set(settings.names()))
    if unknown:
        raise InputError("rate-limit", f"no backend named {unknown[0]!r}; known: {', '.join(settings.names())}")
    run_dir = request.out or Path("runs") / f"{Path(request.config).stem if is_file else request.config}-{kind}-{backend_name}"
    identity = RunManifest(config=config_label, dataset=request.dataset, dataset_options=request.dataset_options,
                           backend=backend_name, seed=request.seed, taxonomy="").identity()
    check_run_dir(run_dir, identity)
    mode = parse_mode(request.retrieval)
    return CheckedRequest(request=request, kind=kind, settings=settings, backend_name=backend_name, override=override,
                          run_dir=run_dir, mode=mode, price_table=price_table, strategy=strategy,
                          config_label=config_label, departures=planned_departures(plan_of(strategy, settings, override, mode)))


def plan_of(strategy: StrategyConfig, settings: BackendSettings, override: str | None, mode: RetrievalMode | None) -> PlannedRun:
    """The run of ``strategy`` as it is known before it starts: the agents' backend (the override, else the
    configuration's own, else the default), the retrieval mode and the config file's tools."""
    agents = override or strategy.backend or resolve_backend_name(None, settings)
    return PlannedRun(config=strategy, backend_name=agents, backend=settings.get(agents), mode=mode, file_tools=settings.tools,
                      lookup=settings.get, overridden=override is not None)


def finish_departures(run_dir: Path, planned: list[StatedDeparture], strategy: StrategyConfig) -> list[StatedDeparture]:
    """The run's departures once its rows are in: the planned ones and what the rows show, written to ``run.json``."""
    from debates.eval.score.report import load_run

    manifest, rows = load_run(run_dir)
    departures = combined(planned, row_departures(run_shares(rows), asks_for_evidence(strategy)))
    updated = manifest.model_copy(update={"departures": departures})
    OwnedFolder(run_dir).write_json(MANIFEST, updated)
    return departures


def load_samples(request: EvaluateRequest) -> tuple[LoadedDataset, list[Sample]]:
    """The data set and the samples a run takes from it (``limit`` of them, chosen as ``sample`` says); an error if there are none."""
    loaded = load_dataset(request.dataset, request.dataset_options)
    samples = subset_of(request).take(loaded.samples)
    if not samples:
        raise InputError("dataset", f"the data set gave no samples ({loaded.report.skipped_total} rows left out: "
                                    f"{loaded.report.skipped})")
    return loaded, samples


async def run_evaluation(
    checked: CheckedRequest,
    *,
    loaded: LoadedDataset | None = None,
    progress: RunProgress | None = None,
    note: Callable[[str], None] | None = None,
) -> EvaluateResult:
    """Run (or resume) one configuration over the data set into its run folder, then write its report.

    ``loaded`` is the data set when the caller has read it already (several runs over one data set);
    ``note`` receives one-line remarks for the user (how many samples, what the loader left out, a model
    server that refuses connections and is being waited for).
    """
    request = checked.request
    if loaded is None:
        loaded, samples = load_samples(request)
    else:
        samples = subset_of(request).take(loaded.samples)
        if not samples:
            raise InputError("dataset", "the data set gave no samples")
    pool = RateLimitedPool(checked.settings, rate_limits=request.rate_limits)
    # Opening the session finds a store that cannot be opened before any sample runs, and closes the pool if so.
    async with RunSession(checked.strategy, pool, backend=checked.override, retrieval=checked.mode,
                          evidence_store=request.evidence_store, close_pool=True) as session:
        if note is not None:
            note(samples_line(request, loaded, samples))
        manifest = RunManifest(config=checked.config_label, dataset=request.dataset, dataset_options=request.dataset_options,
                               backend=checked.backend_name, seed=request.seed, taxonomy=samples[0].taxonomy,
                               subset=subset_of(request),
                               load_report=loaded.report, retrieval=session.mode, departures=checked.departures)
        if progress is not None:
            progress.start(checked.config_label, len(samples))
        recorder = None
        if request.record_trajectories:
            from debates.strategies.factguard.training.trajectories import TrajectoryRecorder

            recorder = TrajectoryRecorder(checked.run_dir)
        runner = _runner(checked, samples, session, manifest, progress, recorder, loaded.gold_evidence)
        with notes_to(note):
            outcome = await runner.run()
    finish_departures(outcome.out_dir, checked.departures, checked.strategy)
    summary = write_report(outcome.out_dir)
    return EvaluateResult(outcome=outcome, summary=summary, samples=samples)


def _runner(checked: CheckedRequest, samples: list[Sample], session: RunSession, manifest: RunManifest,
            progress: RunProgress | None, recorder: Any, gold_evidence: Mapping[str, list[Evidence]] | None) -> BatchRunner:
    """The batch runner of this run: in this process, or on Ray workers (``workers``/``ray_address``), each of
    which opens the same session on its own backend pool."""
    request = checked.request
    options: dict[str, Any] = dict(concurrency=request.concurrency, prices=checked.price_table,
                                   rerun_errors=request.rerun_errors, recorder=recorder, gold_evidence=gold_evidence,
                                   on_progress=progress.update if progress is not None else None)
    if on_ray(request.workers, request.ray_address):
        from debates.eval.run.ray_runner import RayBatchRunner

        return RayBatchRunner(checked.config_label, samples, session, checked.run_dir, manifest, workers=request.workers,
                              address=request.ray_address, max_worker_deaths=request.max_worker_deaths, **options)
    return BatchRunner(checked.config_label, samples, session, checked.run_dir, manifest, **options)


def subset_of(request: EvaluateRequest) -> Subset:
    return Subset(how=request.sample, seed=request.seed, limit=request.limit)


def samples_line(request: EvaluateRequest, loaded: LoadedDataset, samples: list[Sample]) -> str:
    """How many samples the run takes and how they were chosen, and what the loader left out and why."""
    line = f"{subset_of(request).describe(len(samples), len(loaded.samples))} from {request.dataset}"
    taken = sorted({s.gold_label for s in samples if s.gold_label is not None})
    if len(samples) > 1 and len(taken) == 1 and len(loaded.report.labels) > 1:
        line += f" (every one {taken[0]}: try --sample balanced)"
    skipped = loaded.report.skipped
    if skipped:
        reasons = sorted(skipped.items(), key=lambda item: -item[1])
        shown = "; ".join(f"{n} {reason}" for reason, n in reasons[:3]) + ("; ..." if len(reasons) > 3 else "")
        line += f"; the loader left out {loaded.report.skipped_total} rows ({shown}; all in report.md)"
    return line


def worker_deaths_line(outcome: Any) -> str | None:
    """What Ray workers that died cost the run, when any did."""
    deaths = getattr(outcome, "worker_deaths", 0)
    if not deaths:
        return None
    given_up = getattr(outcome, "given_up", [])
    return (f"{deaths} Ray worker(s) died; their samples ran again on other workers"
            + (f"; {len(given_up)} that kept killing workers are recorded as errors" if given_up else ""))


def run_costs_line(rows: list[Any]) -> str:
    """What the run's samples cost in model calls that reached a model and in network fetches for evidence."""
    calls = sum(r.model_calls for r in rows)
    cached = sum(r.cache_hits for r in rows)
    fetches = sum(((r.verdict or {}).get("evidence_report") or {}).get("network_fetches", 0) for r in rows)
    modes = sorted({str(((r.verdict or {}).get("evidence_report") or {}).get("mode", "none")) for r in rows})
    cut = sum(r.cut_answers for r in rows)
    return (f"model calls: {calls - cached} reached a model, {cached} answered from the response cache; "
            f"answers cut at the token cap: {cut}; "
            f"network fetches for evidence: {fetches} (retrieval {', '.join(modes) or 'none'})")
