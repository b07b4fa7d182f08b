"""Cluster-wide permits without Ray: the limit holds over several workers' gates, idle permits move
to a worker that waits, a dead holder's lease comes back, and rate slots are spaced."""

from __future__ import annotations

import asyncio
from typing import Awaitable

import pytest

from debates.eval.run.permits import PermitBroker, PermitGate


class Direct:
    """BrokerCalls straight to the object, as a worker reaches the actor (each call is a task)."""

    def __init__(self, broker: PermitBroker) -> None:
        self.broker = broker
        self.calls = 0

    def _call(self, awaitable: Awaitable[object]) -> asyncio.Future[object]:
        self.calls += 1
        return asyncio.ensure_future(awaitable)

    def acquire(self, holder: str, key: str, limit: int, want: int):  # type: ignore[no-untyped-def]
        return self._call(self.broker.acquire(holder, key, limit, want))

    def release(self, holder: str, key: str, count: int):  # type: ignore[no-untyped-def]
        return self._call(self.broker.release(holder, key, count))

    def watch(self, holder: str, key: str):  # type: ignore[no-untyped-def]
        return self._call(self.broker.watch(holder, key))

    def reserve(self, key: str, requests_per_minute: float):  # type: ignore[no-untyped-def]
        return self._call(self.broker.reserve(key, requests_per_minute))


async def test_the_limit_holds_across_gates_and_no_call_is_left_waiting() -> None:
    broker = PermitBroker()
    calls = Direct(broker)
    gates = [PermitGate(calls, f"worker-{i}", "vllm", limit=3) for i in range(3)]
    running = peak = 0
    done: dict[str, int] = {}

    async def call(gate: PermitGate) -> None:
        nonlocal running, peak
        async with gate:
            running += 1
            peak = max(peak, running)
            await asyncio.sleep(0.005)
            running -= 1
        done[gate.holder] = done.get(gate.holder, 0) + 1

    await asyncio.gather(*(call(gates[i % 3]) for i in range(60)))
    assert peak == 3
    assert done == {"worker-0": 20, "worker-1": 20, "worker-2": 20}
    assert (await broker.stats("vllm"))["peak"] == 3
    for gate in gates:
        await gate.close()
    assert (await broker.stats("vllm"))["leased"] == 0


async def test_an_uncontended_worker_keeps_its_lease_without_asking_again() -> None:
    broker = PermitBroker()
    calls = Direct(broker)
    gate = PermitGate(calls, "worker-0", "vllm", limit=100)
    for _ in range(50):
        async with gate:
            await asyncio.sleep(0)
    # One lease request and one contention watch, not two round trips per call.
    assert calls.calls == 2
    await gate.close()


async def test_idle_permits_go_to_a_worker_that_waits() -> None:
    broker = PermitBroker()
    first = PermitGate(Direct(broker), "worker-0", "vllm", limit=2)
    second = PermitGate(Direct(broker), "worker-1", "vllm", limit=2)
    async with first:
        async with first:
            pass
    assert first.leased == 2
    async with second:
        assert second.leased >= 1
    assert first.leased < 2
    for gate in (first, second):
        await gate.close()


async def test_a_retired_holder_gives_back_its_lease_and_its_waiting_request_gets_nothing() -> None:
    broker = PermitBroker()
    assert await broker.acquire("dead", "vllm", 2, 2) == (2, False)
    waiting = asyncio.ensure_future(broker.acquire("dead", "vllm", 2, 1))
    other = asyncio.ensure_future(broker.acquire("alive", "vllm", 2, 1))
    await asyncio.sleep(0)
    assert await broker.retire("dead") == 2
    assert await waiting == (0, False)
    assert (await other)[0] == 1
    assert await broker.acquire("dead", "vllm", 2, 1) == (0, False)
    assert (await broker.stats("vllm"))["leased"] == 1


async def test_a_gate_whose_holder_was_retired_fails_its_calls_instead_of_spinning() -> None:
    broker = PermitBroker()
    await broker.retire("worker-0")
    gate = PermitGate(Direct(broker), "worker-0", "vllm", limit=2)
    with pytest.raises(Exception, match="no longer serves"):
        async with gate:
            pass


async def test_rate_slots_are_spaced_for_the_whole_cluster() -> None:
    broker = PermitBroker()
    delays = [await broker.reserve("openai", 600) for _ in range(4)]
    assert delays[0] == pytest.approx(0.0, abs=0.01)
    assert [round(b - a, 2) for a, b in zip(delays, delays[1:])] == [0.1, 0.1, 0.1]
