"""Per-backend concurrency and rate limits that hold across every worker of a distributed run.

In one process a backend's ``concurrency`` is an ``asyncio.Semaphore``. Across processes the
count must live in one place: a :class:`PermitBroker` (one Ray actor per run) owns the permits of
every backend, and each worker's :class:`PermitGate` replaces the backend's semaphore.

Asking the broker for every model call would cost two round trips per call, more CPU than the
call itself. So a worker *leases* permits and keeps them while it uses them: a permit released
by one call is taken by the worker's next call without a round trip. The sum of the leases never
exceeds the limit, so calls in flight across the cluster never do either. A worker gives its idle
permits back when the broker tells it that another worker waits (a long-polled ``watch``), so an
uncontended run talks to the broker only while it ramps up.

A worker that dies keeps its lease until the driver calls :meth:`PermitBroker.retire`; from then
on the broker ignores that holder, even a request of it that was still waiting.

Requests-per-minute limits (hosted APIs) are slots on the broker's clock, one round trip per
call: such APIs take seconds per call and a few calls per second, so the round trip is noise.

The broker and the gate are plain asyncio, so they are tested without Ray; :class:`BrokerCalls`
is how a gate reaches its broker (a Ray actor handle in a worker, the object itself in a test).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Protocol

from m3d_agents.backends.config import BackendConfig, BackendSettings
from m3d_agents.backends.factory import Backend, BackendPool
from m3d_agents.errors import BackendError


@dataclass
class _Waiter:
    holder: str
    want: int
    future: asyncio.Future[int]


@dataclass
class _Pool:
    limit: int
    leases: dict[str, int] = field(default_factory=dict)
    waiters: deque[_Waiter] = field(default_factory=deque)
    watchers: list[asyncio.Future[None]] = field(default_factory=list)
    peak: int = 0
    next_slot: float = 0.0

    @property
    def leased(self) -> int:
        return sum(self.leases.values())


class PermitBroker:
    """Counts the permits of every backend for the whole cluster; grants are first come, first served."""

    def __init__(self) -> None:
        self._pools: dict[str, _Pool] = {}
        self._retired: set[str] = set()

    def _pool(self, key: str, limit: int) -> _Pool:
        pool = self._pools.get(key)
        if pool is None:
            pool = self._pools[key] = _Pool(limit=max(1, limit))
        return pool

    async def acquire(self, holder: str, key: str, limit: int, want: int) -> tuple[int, bool]:
        """Lease between 1 and ``want`` permits of ``key`` (waiting for one if none is free); returns
        how many, and whether other holders are waiting. A retired holder gets none."""
        pool = self._pool(key, limit)
        if holder in self._retired:
            return 0, bool(pool.waiters)
        free = pool.limit - pool.leased
        if free > 0 and not pool.waiters:
            self._grant(pool, holder, min(max(1, want), free))
            return min(max(1, want), free), False
        waiter = _Waiter(holder, max(1, want), asyncio.get_running_loop().create_future())
        pool.waiters.append(waiter)
        self._notify(pool)
        try:
            granted = await waiter.future
        except asyncio.CancelledError:
            if waiter in pool.waiters:
                pool.waiters.remove(waiter)
            elif waiter.future.done() and not waiter.future.cancelled():
                self._take_back(pool, holder, waiter.future.result())
            raise
        return granted, bool(pool.waiters)

    async def release(self, holder: str, key: str, count: int) -> bool:
        """Give back ``count`` permits; returns whether other holders are still waiting."""
        pool = self._pools.get(key)
        if pool is None:
            return False
        self._take_back(pool, holder, count)
        return bool(pool.waiters)

    async def watch(self, holder: str, key: str) -> bool:
        """Return once some holder waits for a permit of ``key`` (at once if one waits now)."""
        pool = self._pools.get(key)
        if pool is None or holder in self._retired:
            return False
        if pool.waiters:
            return True
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        pool.watchers.append(future)
        try:
            await future
        finally:
            if future in pool.watchers:
                pool.watchers.remove(future)
        return holder not in self._retired

    async def reserve(self, key: str, requests_per_minute: float) -> float:
        """The next free slot of the rate: seconds to wait before sending the call."""
        pool = self._pool(key, 1)
        now = time.monotonic()
        slot = max(now, pool.next_slot)
        pool.next_slot = slot + 60.0 / requests_per_minute
        return slot - now

    async def retire(self, holder: str) -> int:
        """Forget a dead holder: its leases return to the pools and its waiting requests get nothing."""
        self._retired.add(holder)
        freed = 0
        for pool in self._pools.values():
            for waiter in [w for w in pool.waiters if w.holder == holder]:
                pool.waiters.remove(waiter)
                if not waiter.future.done():
                    waiter.future.set_result(0)
            freed += pool.leases.pop(holder, 0)
            self._serve(pool)
        return freed

    async def stats(self, key: str) -> dict[str, int]:
        """The limit, the permits leased now, the most ever leased at once, and the waiting requests."""
        pool = self._pools.get(key)
        if pool is None:
            return {"limit": 0, "leased": 0, "peak": 0, "waiting": 0}
        return {"limit": pool.limit, "leased": pool.leased, "peak": pool.peak, "waiting": len(pool.waiters)}

    def _grant(self, pool: _Pool, holder: str, count: int) -> None:
        pool.leases[holder] = pool.leases.get(holder, 0) + count
        pool.peak = max(pool.peak, pool.leased)

    def _take_back(self, pool: _Pool, holder: str, count: int) -> None:
        held = pool.leases.get(holder, 0)
        left = held - min(count, held)
        if left:
            pool.leases[holder] = left
        else:
            pool.leases.pop(holder, None)
        self._serve(pool)

    def _serve(self, pool: _Pool) -> None:
        while pool.waiters and pool.limit - pool.leased > 0:
            waiter = pool.waiters.popleft()
            if waiter.future.done():
                continue
            count = min(waiter.want, pool.limit - pool.leased)
            self._grant(pool, waiter.holder, count)
            waiter.future.set_result(count)

    def _notify(self, pool: _Pool) -> None:
        for future in pool.watchers:
            if not future.done():
                future.set_result(None)
        pool.watchers.clear()


class BrokerCalls(Protocol):
    """How a gate reaches the broker: each call returns an awaitable of the broker method's result."""

    def acquire(self, holder: str, key: str, limit: int, want: int) -> Awaitable[tuple[int, bool]]: ...

    def release(self, holder: str, key: str, count: int) -> Awaitable[bool]: ...

    def watch(self, holder: str, key: str) -> Awaitable[bool]: ...

    def reserve(self, key: str, requests_per_minute: float) -> Awaitable[float]: ...


class ActorCalls:
    """:class:`BrokerCalls` over a Ray actor handle of :class:`PermitBroker` (an ObjectRef is awaitable)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def acquire(self, holder: str, key: str, limit: int, want: int) -> Awaitable[tuple[int, bool]]:
        return self.handle.acquire.remote(holder, key, limit, want)

    def release(self, holder: str, key: str, count: int) -> Awaitable[bool]:
        return self.handle.release.remote(holder, key, count)

    def watch(self, holder: str, key: str) -> Awaitable[bool]:
        return self.handle.watch.remote(holder, key)

    def reserve(self, key: str, requests_per_minute: float) -> Awaitable[float]:
        return self.handle.reserve.remote(key, requests_per_minute)


class PermitGate:
    """Stands in for one backend's semaphore in one worker: ``async with gate:`` around every call.

    Permits come from the worker's lease; when the lease has none free, one request to the broker
    asks for as many as there are calls waiting. Idle permits go back to the broker only while
    another holder waits for them.
    """

    def __init__(self, broker: BrokerCalls, holder: str, key: str, limit: int,
                 requests_per_minute: float | None = None) -> None:
        self.broker = broker
        self.holder = holder
        self.key = key
        self.limit = limit
        self.requests_per_minute = requests_per_minute
        self.leased = 0
        self._free = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._fetching: asyncio.Task[None] | None = None
        self._watching: asyncio.Task[None] | None = None
        self._contended = False
        self._uncontended = asyncio.Event()
        self._background: set[asyncio.Future[Any]] = set()

    async def __aenter__(self) -> None:
        if self._free > 0:
            self._free -= 1
        else:
            waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            if self._fetching is None:
                self._fetching = asyncio.ensure_future(self._fetch())
            try:
                await waiter
            except asyncio.CancelledError:
                if waiter.done() and not waiter.cancelled():
                    self._put_back()
                elif waiter in self._waiters:
                    self._waiters.remove(waiter)
                raise
        if self.requests_per_minute:
            try:
                delay = await self.broker.reserve(self.key, self.requests_per_minute)
                if delay > 0:
                    await asyncio.sleep(delay)
            except BaseException:
                self._put_back()
                raise

    async def __aexit__(self, *exc: Any) -> None:
        self._put_back()

    def _put_back(self) -> None:
        """A permit is free again: to the next local call, or, while another holder waits, back to
        the broker (whose queue is first come, first served, so no worker starves another)."""
        if self._contended:
            self._free += 1
            self._give_back()
        else:
            self._hand_out()

    def _hand_out(self) -> None:
        """A permit just leased goes to the first call still waiting (or stays free)."""
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._free += 1

    async def _fetch(self) -> None:
        try:
            while self._waiters:
                granted, contended = await self.broker.acquire(self.holder, self.key, self.limit, len(self._waiters))
                if not granted:
                    self._fail_waiters(BackendError(f"the run's permit broker no longer serves this worker ({self.holder})"))
                    return
                self.leased += granted
                for _ in range(granted):
                    self._hand_out()
                self._note_contention(contended)
                if self._watching is None:
                    self._watching = asyncio.ensure_future(self._watch())
        finally:
            self._fetching = None

    async def _watch(self) -> None:
        """Long-polls the broker; when another holder waits, idle permits go back at once."""
        while await self.broker.watch(self.holder, self.key):
            self._note_contention(True)
            self._give_back()
            await self._uncontended.wait()

    def _fail_waiters(self, error: Exception) -> None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                waiter.set_exception(error)

    def _give_back(self) -> None:
        if self._free <= 0:
            return
        count, self._free = self._free, 0
        self.leased -= count
        self._spawn(self.broker.release(self.holder, self.key, count), self._note_contention)

    def _note_contention(self, contended: bool) -> None:
        self._contended = contended
        if contended:
            self._uncontended.clear()
        else:
            self._uncontended.set()

    def _spawn(self, call: Awaitable[Any], then: Callable[[Any], None]) -> None:
        future = asyncio.ensure_future(call)
        self._background.add(future)

        def done(finished: asyncio.Future[Any]) -> None:
            self._background.discard(finished)
            if not finished.cancelled() and finished.exception() is None:
                then(finished.result())

        future.add_done_callback(done)

    async def close(self) -> None:
        for task in (self._fetching, self._watching):
            if task is not None:
                task.cancel()
        if self.leased:
            await self.broker.release(self.holder, self.key, self.leased)
            self.leased = self._free = 0


class ClusterPool(BackendPool):
    """A worker's BackendPool whose backends take their permits from the run's broker, so that each
    backend's ``concurrency`` (and ``--rate-limit``) counts calls across the cluster, not per worker."""

    def __init__(self, settings: BackendSettings | None = None, overrides: dict[str, BackendConfig] | None = None, *,
                 broker: BrokerCalls, holder: str, rate_limits: dict[str, float] | None = None) -> None:
        super().__init__(settings, overrides)
        self.broker = broker
        self.holder = holder
        self.rate_limits = rate_limits or {}
        self.gates: dict[str, PermitGate] = {}

    def get(self, name: str, model: str | None = None) -> Backend:
        key = f"{name}:{model}" if model else name
        fresh = key not in self._backends
        backend = super().get(name, model=model)
        if fresh:
            gate = PermitGate(self.broker, self.holder, key, backend.config.concurrency, self.rate_limits.get(name))
            self.gates[key] = gate
            backend.gate_calls(gate)
        return backend

    async def close(self) -> None:
        for gate in self.gates.values():
            await gate.close()
        self.gates.clear()
        await super().close()
