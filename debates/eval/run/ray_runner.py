"""The batch runner with its samples run by Ray workers: ``m3d evaluate --workers N`` or ``--ray-address``.

One process cannot keep a model server busy once the framework's CPU per call, times the calls
in flight, exceeds the server's latency; more processes can. This runner keeps every guarantee of
:class:`~debates.eval.run.batch.BatchRunner` because the driver still does everything that touches the
run folder: it holds the run's lock for the whole run, reads what is done, and alone appends the
fsynced rows. Workers only turn samples into rows.

- The driver is killed (even ``kill -9``): the rows on disk are every row it wrote; a worker's row
  that had not reached the driver is not there, so that sample runs again on resume. Nothing is
  written twice because only the driver writes. Its Ray actors end with it.
- A worker dies: the driver replaces it, and the samples it had in flight run again on another
  worker, isolated until the one that kills workers is found (:mod:`debates.eval.run.dispatch`); a
  sample that keeps killing workers is recorded as an error (:class:`WorkerDied`) after
  ``max_worker_deaths``.
- Per-backend concurrency and ``--rate-limit`` hold for the cluster, through one permit broker
  (:mod:`debates.eval.run.permits`).

``--concurrency`` is the samples in flight for the whole run, split evenly over the workers, so the
same value asks the same of the model server whatever the number of workers.
"""

from __future__ import annotations

import asyncio
import importlib
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Iterable

from debates.eval.run.batch import BatchOutcome, BatchRunner, cancel_on_signals, error_row
from debates.eval.records import RESULTS
from debates.session import sample_seed
from debates.eval.run.cluster import RaySession, WorkerSpec, absolute_paths
from debates.eval.run.dispatch import Dispatcher, Item, Slot
from debates.eval.run.ratelimit import RateLimitedPool
from debates.eval.records import EvalRow, read_rows
from m3d_agents.errors import BackendError, InputError


START_GRACE_S = 30.0
"""How long the first workers up wait for the others before samples go out."""


class WorkerDied(RuntimeError):
    """A worker process died each time it ran this sample alone."""


@dataclass
class RayOutcome(BatchOutcome):
    workers: int = 0
    worker_deaths: int = 0
    retried: list[str] = field(default_factory=list)
    """Samples that were in flight on a worker when it died, and ran again."""
    given_up: list[str] = field(default_factory=list)
    """Samples recorded as errors because they kept killing their workers."""
    dispatch_wall_s: float = 0.0
    """From the first sample sent to the last row written: the run without the workers' start."""
    cpu_s: dict[str, float] = field(default_factory=dict)
    """CPU seconds over that time of the driver, the workers and the permit broker (for the benchmark)."""


async def _result(ref: Any) -> Any:
    return await ref


class RayBatchRunner(BatchRunner):
    """A :class:`BatchRunner` whose samples run on Ray workers; the constructor takes the same
    arguments (any further keyword argument reaches each worker's runner unchanged), plus:

    - ``workers``: how many worker processes (default: one per CPU of the cluster);
    - ``address``: an existing Ray cluster (default: a local one for this run, or the one this
      process is already connected to);
    - ``max_worker_deaths``: how many times a sample may kill its worker before it is recorded as an error;
    - ``worker_imports``: modules each worker imports first (plug-ins that register themselves);
    - ``start_timeout_s`` and ``start_attempts``: how long a worker may take to start, and how
      many times a slot tries before the run goes on without it.
    """

    def __init__(self, *args: Any, workers: int | None = None, address: str | None = None, max_worker_deaths: int = 3,
                 worker_imports: Iterable[str] = (), start_timeout_s: float = 300.0, start_attempts: int = 3,
                 **options: Any) -> None:
        super().__init__(*args, **options)
        if workers is not None and workers < 1:
            raise InputError("workers", "must be at least 1")
        if max_worker_deaths < 1:
            raise InputError("max_worker_deaths", "must be at least 1")
        self.workers = workers
        self.address = address
        self.max_worker_deaths = max_worker_deaths
        self.worker_imports = tuple(worker_imports)
        self.start_timeout_s = start_timeout_s
        self.start_attempts = start_attempts
        self._worker_options = {k: v for k, v in options.items() if k not in ("on_progress", "concurrency")}
        self.live_workers: dict[str, dict[str, Any]] = {}
        """Slot name -> the running worker's holder id, pid and node, while the run lasts."""

    def _spec(self) -> WorkerSpec:
        """What each worker needs: the session's recipe (each worker opens the same session, its evidence
        sources included, on its own pool: live objects cannot leave this process, their recipe can)."""
        pool = self.pool
        return WorkerSpec(
            config=self.config, out_dir=self.out_dir, manifest=self.manifest, settings=pool.settings,
            overrides=dict(pool.overrides), rate_limits=dict(pool.rate_limits) if isinstance(pool, RateLimitedPool) else {},
            imports=self.worker_imports, options=self._worker_options, session=self.session.spec(),
        )

    def _progress(self) -> None:
        if self.on_progress is not None:
            self.on_progress(self.tally)

    async def _run(self) -> BatchOutcome:
        todo, _, torn = self.pending()
        outcome = RayOutcome(self.out_dir, len(self.samples), len(self.samples) - len(todo), 0, self.tally,
                             repaired_torn_line=torn)
        self._progress()
        if todo:
            for module in self.worker_imports:
                importlib.import_module(module)
            session = RaySession(self.address, self.workers)
            restore_signals = None
            try:
                available = session.open()
                restore_signals = cancel_on_signals(asyncio.get_running_loop())
                await self._distribute(session, todo, available, outcome)
            except asyncio.CancelledError:
                outcome.interrupted = True
                current = asyncio.current_task()
                if current is not None:
                    current.uncancel()
            finally:
                if restore_signals is not None:
                    restore_signals()
                session.close()
        outcome.rows = read_rows(self.out_dir / RESULTS)[0]
        return outcome

    async def _distribute(self, session: RaySession, todo: list[Item], available: int, outcome: RayOutcome) -> None:
        await _Distribution(self, session, todo, available, outcome).run()


class _Distribution:
    """One run's samples sent out to its workers: the slots, the workers starting and running, the answers
    recorded by the driver alone, a worker that died replaced (its samples sent again), and the CPU it all cost."""

    def __init__(self, runner: RayBatchRunner, session: RaySession, todo: list[Item], available: int,
                 outcome: RayOutcome) -> None:
        self.runner, self.session, self.outcome = runner, session, outcome
        count = max(1, min(available, len(todo), runner.concurrency))
        outcome.workers = count
        self.slots = [Slot(f"worker-{i}", runner.concurrency // count + (1 if i < runner.concurrency % count else 0))
                      for i in range(count)]
        self.dispatcher = Dispatcher([(index, absolute_paths(sample)) for index, sample in todo], self.slots,
                                     runner.max_worker_deaths)
        self.spec = runner._spec()
        self.broker = session.start_broker()
        self.handles: dict[str, Any] = {}
        self.failed_starts: dict[str, int] = {}
        self.last_start_error = ""
        self.calls: dict[asyncio.Future[Any], tuple[Slot, Any, Item]] = {}
        self.starting: dict[asyncio.Future[Any], tuple[Slot, Any]] = {}
        self.writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="results-writer")
        self.backend_name = runner.backend or runner.manifest.backend
        self.first_ready: float | None = None
        self.dispatching = False
        self.dispatch_started = self.driver_cpu = self.broker_cpu = 0.0

    async def run(self) -> None:
        runner = self.runner
        runner.results.open()
        try:
            for slot in self.slots:
                self.start(slot)
            while not self.dispatcher.done:
                if not self.dispatching:
                    await self.begin_when_ready()
                for slot in self.slots if self.dispatching else []:
                    self.send(slot)
                if not self.calls and not self.starting:
                    raise BackendError(f"no Ray worker could start, so {len(self.dispatcher.pending)} samples did not run: "
                                       f"{self.last_start_error}")
                finished, _ = await asyncio.wait([*self.calls, *self.starting], return_when=asyncio.FIRST_COMPLETED,
                                                 timeout=None if self.dispatching or self.first_ready is None else 1.0)
                for future in finished:
                    if future in self.starting:
                        self.started(future)
                    else:
                        await self.answered(future)
            self.outcome.retried = sorted(self.dispatcher.retried)
            if self.dispatching:
                await self.measure()
        finally:
            for future in [*self.calls, *self.starting]:
                future.cancel()
            await _stop(self.session, list(self.handles.values()), self.broker)
            runner.live_workers.clear()
            self.writer.shutdown(wait=True)
            runner.results.close()

    def start(self, slot: Slot) -> None:
        handle = self.session.start_worker(self.spec, self.broker, slot.share)
        self.handles[slot.name] = handle
        hello = asyncio.ensure_future(asyncio.wait_for(_result(handle.hello.remote()), self.runner.start_timeout_s))
        self.starting[hello] = (slot, handle)

    async def begin_when_ready(self) -> None:
        """The first workers wait (a little) for the others, so that samples are spread in order over all of
        them rather than piling onto whichever started first."""
        up = [slot for slot in self.slots if slot.ready]
        if up and self.first_ready is None:
            self.first_ready = time.monotonic()
        initial = [slot for slot in self.slots if slot.ready or self.failed_starts.get(slot.name, 0) == 0]
        self.dispatching = bool(up) and (len(up) == len(initial) or time.monotonic() - (self.first_ready or 0) > START_GRACE_S)
        if self.dispatching:
            self.dispatch_started, self.driver_cpu = time.perf_counter(), time.process_time()
            self.broker_cpu = await _cpu_of(self.broker)

    def send(self, slot: Slot) -> None:
        for index, sample in self.dispatcher.assign(slot):
            handle = self.handles[slot.name]
            self.calls[asyncio.ensure_future(_result(handle.run.remote(index, sample)))] = (slot, handle, (index, sample))

    def started(self, future: asyncio.Future[Any]) -> None:
        """A worker said hello, or failed to start: it is retried, then the run goes on without its slot."""
        slot, handle = self.starting.pop(future)
        try:
            info = future.result()
        except Exception as exc:  # noqa: BLE001 - a worker that cannot start is retried, then left out
            self.session.kill(handle)
            self.last_start_error = _describe(exc, self.runner.start_timeout_s)
            self.failed_starts[slot.name] = self.failed_starts.get(slot.name, 0) + 1
            if self.failed_starts[slot.name] < self.runner.start_attempts:
                self.start(slot)
            else:
                self.handles.pop(slot.name, None)
            return
        self.runner.live_workers[slot.name] = info
        self.failed_starts[slot.name] = 0
        slot.ready = True

    async def answered(self, future: asyncio.Future[Any]) -> None:
        """A worker's row for a sample, or its failure: recorded; a dead worker is replaced instead."""
        slot, handle, (index, sample) = self.calls.pop(future)
        if handle is not self.handles.get(slot.name):
            return  # a late answer from a worker already given up for dead; its sample ran again
        try:
            row = EvalRow.model_validate_json(future.result())
        except Exception as exc:  # noqa: BLE001 - sorted below: a dead worker, or a failure in the worker
            if _is_actor_death(exc):
                await self.died(slot, handle, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
                return
            row = self.error_row(sample, getattr(exc, "cause", None) or exc, index)
        self.dispatcher.finished(slot, sample.id)
        await self.record(row)

    async def died(self, slot: Slot, handle: Any, reason: str) -> None:
        self.outcome.worker_deaths += 1
        for given_up in self.dispatcher.lost(slot):
            index, sample = given_up.item
            error = WorkerDied(f"the worker process died each of the {given_up.tries} times it ran this sample "
                               f"alone (last: {reason})")
            self.outcome.given_up.append(sample.id)
            await self.record(self.error_row(sample, error, index))
        info = self.runner.live_workers.pop(slot.name, None)
        if info is not None:
            self.broker.retire.remote(info["holder"])
        self.session.kill(handle)
        self.start(slot)

    def error_row(self, sample: Any, error: BaseException, index: int) -> EvalRow:
        runner = self.runner
        return error_row(sample, error, index=index, seed=sample_seed(runner.manifest.seed, sample.id), latency_s=0.0,
                         config=runner.config, backend=self.backend_name)

    async def record(self, row: EvalRow) -> None:
        runner = self.runner
        await asyncio.get_running_loop().run_in_executor(self.writer, runner.results.append, row)
        runner.tally.add(row)
        self.outcome.ran += 1
        runner._progress()

    async def measure(self) -> None:
        """The dispatch's wall time and the CPU the driver, the broker and the live workers spent on it."""
        outcome, live = self.outcome, [slot for slot in self.slots if slot.ready]
        outcome.dispatch_wall_s = time.perf_counter() - self.dispatch_started
        driver_cpu = time.process_time() - self.driver_cpu
        ends = await asyncio.gather(_cpu_of(self.broker), *(_cpu_of(self.handles[slot.name]) for slot in live))
        outcome.cpu_s = {
            "driver": driver_cpu, "broker": ends[0] - self.broker_cpu,
            "workers": sum(end - self.runner.live_workers[slot.name]["cpu_s"] for slot, end in zip(live, ends[1:])),
        }


def _is_actor_death(exc: BaseException) -> bool:
    from ray.exceptions import RayActorError

    return isinstance(exc, RayActorError)


def _describe(exc: BaseException, timeout_s: float) -> str:
    if isinstance(exc, asyncio.TimeoutError):
        return f"a worker was not placed and started within {timeout_s:.0f} s (does the cluster have a free CPU per worker?)"
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else ''}"


async def _cpu_of(actor: Any) -> float:
    """An actor's CPU seconds so far (NaN when it does not answer: a figure, never a reason to fail)."""
    try:
        return float(await asyncio.wait_for(_result(actor.cpu_seconds.remote()), 30))
    except Exception:  # noqa: BLE001
        return float("nan")


async def _stop(session: RaySession, workers: list[Any], broker: Any) -> None:
    """Close each worker's backends (their connections), then end the actors."""
    closing = [asyncio.ensure_future(_result(h.close.remote())) for h in workers]
    if closing:
        await asyncio.wait(closing, timeout=10)
    for handle in [*workers, broker]:
        session.kill(handle)
