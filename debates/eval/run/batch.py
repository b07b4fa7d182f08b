"""Run one configuration over many samples: bounded concurrency, resumable, one fsynced row per sample.

The results file is the run's only state. A resumed run reads it, cuts off a torn last line
left by a hard kill, and skips every sample id already there, so an interruption (Ctrl-C,
SIGTERM, kill -9) loses no finished row and repeats none. Samples in flight when the run stops
leave no row and run again on resume. A sample that fails is recorded with its error and the
run goes on; ``rerun_errors`` runs such samples again.

Each sample gets a seed derived from the run seed and its id, so it gets the same seed whatever
the order, concurrency or resumption.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Mapping, Protocol


from debates.eval.lock import LOCK, RunLock
from debates.eval.run.collector import after_sample, batch_collector
from debates.eval.score.prices import PriceTable
from debates.eval.records import MANIFEST, RESULTS, EvalRow, ResultsFile, RowError, RunManifest, read_manifest, read_rows, row_from_verdict
from debates.strategy import StrategyConfig
from debates.session import RunSession, sample_seed
from m3d_agents.backends.factory import BackendPool
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.errors import InputError
from m3d_agents.evidence import Evidence
from m3d_agents.labels import get_taxonomy
from m3d_agents.redaction import redact
from m3d_agents.safe_files import OwnedFolder, UnsafeFile, refuse_foreign_folder
from m3d_agents.sample import Sample
from m3d_agents.verdict import Accounting

class SampleRecorder(Protocol):
    """Keeps more of each sample than its result row (trajectories for training): a ledger per sample, then the verdict."""

    def ledger(self) -> UsageLedger: ...

    def write(self, sample: Sample, verdict: Any, ledger: UsageLedger) -> None: ...


@dataclass
class Tally:
    """Running figures for the progress bar."""

    done: int = 0
    scored: int = 0
    correct: int = 0
    errors: int = 0
    abstained: int = 0
    cost: float | None = 0.0
    last_error: str = ""

    def add(self, row: EvalRow) -> None:
        self.done += 1
        if row.status == "error":
            self.errors += 1
            if row.error is not None:
                self.last_error = f"{row.error.type}: {row.error.message}"[:120]
        if row.status == "abstained":
            self.abstained += 1
        if row.scored:
            self.scored += 1
            self.correct += int(row.correct)
        if self.cost is not None:
            self.cost = None if row.cost_usd is None else self.cost + row.cost_usd

    def line(self) -> str:
        accuracy = f"{self.correct / self.scored:.3f}" if self.scored else "n/a"
        cost = f"${self.cost:.4f}" if self.cost is not None else "$ unknown"
        return f"acc {accuracy} · {cost} · {self.abstained} abstained · {self.errors} errors"


@dataclass
class BatchOutcome:
    out_dir: Path
    total: int
    skipped_done: int
    ran: int
    tally: Tally
    interrupted: bool = False
    repaired_torn_line: bool = False
    rows: list[EvalRow] = field(default_factory=list)


def check_same_run(out_dir: Path, identity: dict[str, Any]) -> None:
    """An error naming ``--out`` unless the run folder's manifest reads and is the run of ``identity``."""
    path = out_dir / MANIFEST
    try:
        existing = read_manifest(path)
    except UnsafeFile:
        raise
    except InputError as exc:
        raise InputError("out", f"{path} {exc.problem}; choose another --out folder") from None
    if existing.identity() != identity:
        before = existing.identity()
        diff = {k: (before.get(k), identity.get(k)) for k in {*before, *identity} if before.get(k) != identity.get(k)}
        raise InputError("out", f"{out_dir} holds a different run ({diff}); choose another --out folder")


def prepare_run_dir(out_dir: Path, manifest: RunManifest) -> None:
    """Create the run folder, or check that an existing one holds the same run."""
    make_run_dir(out_dir)
    path = out_dir / MANIFEST
    if os.path.lexists(path):
        check_same_run(out_dir, manifest.identity())
        return
    refuse_foreign_folder(out_dir, "out", started_run_file, "a run folder (no run.json)")
    manifest.created = datetime.now(timezone.utc).isoformat(timespec="seconds")
    OwnedFolder(out_dir).write_json(MANIFEST, manifest)


def check_run_dir(out_dir: Path, identity: dict[str, Any] | None = None) -> None:
    """Refuse an ``--out`` that cannot be a run folder, or that another run holds, before any work
    and without creating it. (The run itself takes the lock again: this only makes the refusal early.)"""
    probe = out_dir
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if probe == out_dir and not probe.is_dir():
        raise InputError("out", f"{out_dir} is a file, not a folder; choose another --out folder")
    if not probe.is_dir():
        raise InputError("out", f"cannot create the run folder {out_dir}: {probe} is a file")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise InputError("out", f"cannot create the run folder {out_dir}: {probe} is not writable")
    if probe == out_dir:
        if not os.path.lexists(out_dir / MANIFEST):
            refuse_foreign_folder(out_dir, "out", started_run_file, "a run folder (no run.json)")
        refuse_links_inside(out_dir)
        if identity is not None and os.path.lexists(out_dir / MANIFEST):
            check_same_run(out_dir, identity)
        with RunLock(out_dir):
            pass


def started_run_file(name: str) -> bool:
    """What a run leaves before its run.json exists: its lock, and the manifest's temporary file."""
    return name == LOCK or name.startswith(f".{MANIFEST}.")


def refuse_links_inside(out_dir: Path) -> None:
    """Refuse a run folder holding a symbolic link, before any work: every file of a run folder is the
    product's own, and one planted as a link would send a write to its target (each write refuses
    links again, so a link planted during the run is refused too)."""
    try:
        entries = sorted(out_dir.iterdir())
    except OSError as exc:
        raise InputError("out", f"cannot list the run folder {out_dir}: {exc.strerror or exc}") from None
    for entry in entries:
        if entry.is_symlink():
            raise UnsafeFile(entry, "a symbolic link")


def make_run_dir(out_dir: Path) -> None:
    """Create the run folder; an error naming ``--out`` if it is a file or cannot be created."""
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise InputError("out", f"{out_dir} is a file, not a folder; choose another --out folder") from None
    except OSError as exc:
        raise InputError("out", f"cannot create the run folder {out_dir}: {exc.strerror or exc}") from None
    if not os.access(out_dir, os.W_OK):
        raise InputError("out", f"the run folder {out_dir} is not writable")


def error_row(sample: Sample, exc: BaseException, *, index: int, seed: int, latency_s: float, config: str,
              backend: str) -> EvalRow:
    field_name = getattr(exc, "field", None)
    message = redact(str(exc) or repr(exc))
    taxonomy = get_taxonomy(sample.taxonomy)
    return EvalRow(
        sample_id=sample.id, index=index, seed=seed, status="error", taxonomy=sample.taxonomy, gold=sample.gold_label,
        gold_misinformation=taxonomy.is_misinformation(sample.gold_label) if sample.gold_label else None,
        error=RowError(type=type(exc).__name__, message=message[:2000], field=field_name),
        latency_s=round(latency_s, 4), cost_usd=0.0, config=config, backend=backend,
    )


def cancel_on_signals(loop: asyncio.AbstractEventLoop) -> Callable[[], None]:
    """SIGTERM and SIGINT cancel the current task, so a run stops with its finished rows saved;
    returns what puts the previous handlers back."""
    current = asyncio.current_task()
    caught = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, current.cancel)  # type: ignore[union-attr]
            caught.append(sig)
        except (NotImplementedError, RuntimeError, ValueError):
            pass

    def restore() -> None:
        for sig in caught:
            loop.remove_signal_handler(sig)

    return restore


class BatchRunner:
    """Runs the pending samples of one run folder; see the module docstring for the guarantees."""

    def __init__(
        self,
        config: str,
        samples: list[Sample],
        session: RunSession,
        out_dir: Path,
        manifest: RunManifest,
        *,
        concurrency: int = 4,
        prices: PriceTable | None = None,
        rerun_errors: bool = False,
        on_progress: Callable[[Tally], None] | None = None,
        recorder: SampleRecorder | None = None,
        gold_evidence: Mapping[str, list[Evidence]] | None = None,
    ) -> None:
        """Every sample runs in ``session`` (its configuration, backends and evidence sources), which the
        caller opens before :meth:`run` and closes after; ``config`` names the configuration in the rows."""
        if concurrency < 1:
            raise InputError("concurrency", "must be at least 1")
        self.config = config
        self.samples = samples
        self.session = session
        self.out_dir = out_dir
        self.manifest = manifest
        self.concurrency = concurrency
        self.prices = prices or PriceTable()
        self.rerun_errors = rerun_errors
        self.on_progress = on_progress
        self.recorder = recorder
        self.gold_evidence = dict(gold_evidence or {})
        """The data set's own evidence by sample id; only an evidence-bounded strategy setting reads it."""
        self.tally = Tally()
        self.results = ResultsFile(out_dir / RESULTS)

    @property
    def pool(self) -> BackendPool:
        return self.session.pool

    @property
    def backend(self) -> str | None:
        """The run's backend override (``--backend``), if any."""
        return self.session.backend

    @property
    def strategy_config(self) -> StrategyConfig:
        return self.session.config

    def pending(self) -> tuple[list[tuple[int, Sample]], list[EvalRow], bool]:
        prepare_run_dir(self.out_dir, self.manifest)
        rows, torn = read_rows(self.out_dir / RESULTS, repair=True)
        done = {r.sample_id for r in rows if not (self.rerun_errors and r.status == "error")}
        wanted = {s.id for s in self.samples}
        kept = [r for r in rows if r.sample_id in wanted]
        for row in kept:
            if row.sample_id in done:
                self.tally.add(row)
        return [(i, s) for i, s in enumerate(self.samples) if s.id not in done], kept, torn

    def cost_of(self, backend_name: str, prompt_tokens: int, completion_tokens: int) -> float | None:
        """What the tokens cost on ``backend_name`` (``name`` or ``name:model``, as the pool names what it built)."""
        name, _, model = backend_name.partition(":")
        try:
            config = self.pool.config(name)
            price = self.prices.for_backend(config.with_overrides(model=model) if model else config)
        except InputError:
            return None
        return None if price is None else round(price.cost(prompt_tokens, completion_tokens), 8)

    def cost_of_sample(self, accounting: Accounting, backend_name: str) -> float | None:
        """Each backend's calls at its own price (a tool on a backend of its own is priced apart); unknown if any is."""
        if not accounting.by_backend:
            return self.cost_of(backend_name, accounting.prompt_tokens, accounting.completion_tokens)
        costs = [self.cost_of(name, usage.prompt_tokens, usage.completion_tokens) for name, usage in accounting.by_backend.items()]
        return None if any(c is None for c in costs) else round(sum(c for c in costs if c is not None), 8)

    async def run_one(self, index: int, sample: Sample) -> EvalRow:
        row = await self._run_one(index, sample)
        if sample.id in self.gold_evidence:
            row.gold_evidence = len(self.gold_evidence[sample.id])
        return row

    async def _run_one(self, index: int, sample: Sample) -> EvalRow:
        seed = sample_seed(self.manifest.seed, sample.id)
        backend_name = self.backend or self.manifest.backend
        started = time.perf_counter()
        ledger = self.recorder.ledger() if self.recorder is not None else None
        try:
            verdict = await self.session.run(sample, seed=seed, gold_evidence=self.gold_evidence.get(sample.id), ledger=ledger)
            if self.recorder is not None and ledger is not None:
                self.recorder.write(sample, verdict, ledger)
        except Exception as exc:  # noqa: BLE001 - a failed sample is recorded and the run goes on
            return error_row(sample, exc, index=index, seed=seed, latency_s=time.perf_counter() - started,
                             config=self.config, backend=backend_name)
        latency = time.perf_counter() - started
        taxonomy = get_taxonomy(sample.taxonomy)
        acc = verdict.accounting
        return row_from_verdict(
            verdict, index=index, seed=seed, gold=sample.gold_label,
            gold_mis=taxonomy.is_misinformation(sample.gold_label) if sample.gold_label else None,
            latency_s=latency, cost_usd=self.cost_of_sample(acc, verdict.backend or backend_name),
            config=self.config, backend=backend_name,
        )

    async def run(self) -> BatchOutcome:
        make_run_dir(self.out_dir)
        with RunLock(self.out_dir), batch_collector():
            return await self._run()

    async def _run(self) -> BatchOutcome:
        todo, kept, torn = self.pending()
        outcome = BatchOutcome(self.out_dir, len(self.samples), len(self.samples) - len(todo), 0, self.tally,
                               repaired_torn_line=torn)
        if self.on_progress is not None:
            self.on_progress(self.tally)
        queue: asyncio.Queue[tuple[int, Sample]] = asyncio.Queue()
        for item in todo:
            queue.put_nowait(item)
        self.results.open()
        # One writer thread keeps rows in completion order and keeps each fsync off the event loop,
        # where it would stall every request in flight.
        writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="results-writer")
        loop = asyncio.get_running_loop()

        async def worker() -> None:
            while True:
                try:
                    index, sample = queue.get_nowait()
                except asyncio.QueueEmpty:
                    return
                row = await self.run_one(index, sample)
                await loop.run_in_executor(writer, self.results.append, row)
                after_sample()
                self.tally.add(row)
                outcome.ran += 1
                if self.on_progress is not None:
                    self.on_progress(self.tally)

        current = asyncio.current_task()
        restore_signals = cancel_on_signals(loop)
        workers = [asyncio.create_task(worker()) for _ in range(min(self.concurrency, len(todo)))]
        try:
            await asyncio.gather(*workers)
        except asyncio.CancelledError:
            outcome.interrupted = True
            for task in workers:
                task.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            if current is not None:
                current.uncancel()
        finally:
            restore_signals()
            writer.shutdown(wait=True)
            self.results.close()
        outcome.rows = read_rows(self.out_dir / RESULTS)[0]
        return outcome
