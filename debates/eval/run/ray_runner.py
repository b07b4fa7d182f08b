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
        loop = asyncio.get_running_loop()
        count = max(1, min(available, len(todo), self.concurrency))
        outcome.workers = count
        slots = [Slot(f"worker-{i}", self.concurrency // count + (1 if i < self.concurrency % count else 0))
                 for i in range(count)]
        dispatcher = Dispatcher([(index, absolute_paths(sample)) for index, sample in todo], slots, self.max_worker_deaths)
        spec = self._spec()
        broker = session.start_broker()
        handles: dict[str, Any] = {}
        failed_starts: dict[str, int] = {}
        last_start_error = ""
        calls: dict[asyncio.Future[Any], tuple[Slot, Any, Item]] = {}
        starting: dict[asyncio.Future[Any], tuple[Slot, Any]] = {}
        writer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="results-writer")
        backend_name = self.backend or self.manifest.backend

        def start(slot: Slot) -> None:
            handle = session.start_worker(spec, broker, slot.share)
            handles[slot.name] = handle
            hello = asyncio.ensure_future(asyncio.wait_for(_result(handle.hello.remote()), self.start_timeout_s))
            starting[hello] = (slot, handle)

        async def record(row: EvalRow) -> None:
            await loop.run_in_executor(writer, self.results.append, row)
            self.tally.add(row)
            outcome.ran += 1
            self._progress()

        async def died(slot: Slot, handle: Any, reason: str) -> None:
            outcome.worker_deaths += 1
            for given_up in dispatcher.lost(slot):
                index, sample = given_up.item
                error = WorkerDied(f"the worker process died each of the {given_up.tries} times it ran this sample "
                                   f"alone (last: {reason})")
                outcome.given_up.append(sample.id)
                await record(error_row(sample, error, index=index, seed=sample_seed(self.manifest.seed, sample.id),
                                       latency_s=0.0, config=self.config, backend=backend_name))
            info = self.live_workers.pop(slot.name, None)
            if info is not None:
                broker.retire.remote(info["holder"])
            session.kill(handle)
            start(slot)

        self.results.open()
        try:
            for slot in slots:
                start(slot)
            first_ready: float | None = None
            dispatching = False
            while not dispatcher.done:
                if not dispatching:
                    # The first workers wait (a little) for the others, so that samples are spread in
                    # order over all of them rather than piling onto whichever started first.
                    up = [slot for slot in slots if slot.ready]
                    if up and first_ready is None:
                        first_ready = time.monotonic()
                    initial = [slot for slot in slots if slot.ready or failed_starts.get(slot.name, 0) == 0]
                    dispatching = bool(up) and (len(up) == len(initial) or time.monotonic() - (first_ready or 0) > START_GRACE_S)
                    if dispatching:
                        dispatch_started, driver_cpu = time.perf_counter(), time.process_time()
                        broker_cpu = await _cpu_of(broker)
                for slot in slots if dispatching else []:
                    for index, sample in dispatcher.assign(slot):
                        handle = handles[slot.name]
                        calls[asyncio.ensure_future(_result(handle.run.remote(index, sample)))] = (slot, handle, (index, sample))
                if not calls and not starting:
                    raise BackendError(f"no Ray worker could start, so {len(dispatcher.pending)} samples did not run: "
                                       f"{last_start_error}")
                finished, _ = await asyncio.wait([*calls, *starting], return_when=asyncio.FIRST_COMPLETED,
                                                 timeout=None if dispatching or first_ready is None else 1.0)
                for future in finished:
                    if future in starting:
                        slot, handle = starting.pop(future)
                        try:
                            info = future.result()
                        except Exception as exc:  # noqa: BLE001 - a worker that cannot start is retried, then left out
                            session.kill(handle)
                            last_start_error = _describe(exc, self.start_timeout_s)
                            failed_starts[slot.name] = failed_starts.get(slot.name, 0) + 1
                            if failed_starts[slot.name] < self.start_attempts:
                                start(slot)
                            else:
                                handles.pop(slot.name, None)
                            continue
                        self.live_workers[slot.name] = info
                        failed_starts[slot.name] = 0
                        slot.ready = True
                        continue
                    slot, handle, (index, sample) = calls.pop(future)
                    if handle is not handles.get(slot.name):
                        continue  # a late answer from a worker already given up for dead; its sample ran again
                    try:
                        row = EvalRow.model_validate_json(future.result())
                    except Exception as exc:  # noqa: BLE001 - sorted below: a dead worker, or a failure in the worker
                        if _is_actor_death(exc):
                            await died(slot, handle, str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
                            continue
                        row = error_row(sample, getattr(exc, "cause", None) or exc, index=index,
                                        seed=sample_seed(self.manifest.seed, sample.id), latency_s=0.0,
                                        config=self.config, backend=backend_name)
                    dispatcher.finished(slot, sample.id)
                    await record(row)
            outcome.retried = sorted(dispatcher.retried)
            if dispatching:
                outcome.dispatch_wall_s = time.perf_counter() - dispatch_started
                driver_cpu = time.process_time() - driver_cpu
                live = [slot for slot in slots if slot.ready]
                ends = await asyncio.gather(_cpu_of(broker), *(_cpu_of(handles[slot.name]) for slot in live))
                outcome.cpu_s = {
                    "driver": driver_cpu, "broker": ends[0] - broker_cpu,
                    "workers": sum(end - self.live_workers[slot.name]["cpu_s"] for slot, end in zip(live, ends[1:])),
                }
        finally:
            for future in [*calls, *starting]:
                future.cancel()
            await _stop(session, list(handles.values()), broker)
            self.live_workers.clear()
            writer.shutdown(wait=True)
            self.results.close()


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
