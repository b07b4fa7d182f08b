"""A hung model server cannot hold a call past the backend's total deadline, whatever its retries allow."""

from __future__ import annotations

import pytest
from autogen_core.models import UserMessage

from m3d_agents.backends.config import BackendConfig, BackendSettings
from m3d_agents.backends.factory import BackendPool
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.errors import BackendError
from tests.support.fault_server import FaultServer


async def test_a_hung_local_server_is_given_up_on_at_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    with FaultServer(rate=1.0, faults=("hang",), hang_s=5.0) as server:
        monkeypatch.setenv("M3D_LOCAL_BASE_URL", server.base_url)
        # 21 attempts of 1 s each would hold the call for over 20 s without the deadline.
        config = BackendConfig(kind="local", timeout_s=1.0, transport_retries=20, deadline_s=2.0, cache=False)
        pool = BackendPool(BackendSettings(backends={"local": config}))
        try:
            client = pool.get("local").view(UsageLedger(), agent="checker", role="checker")
            with pytest.raises(BackendError, match="within its deadline of 2 s"):
                await client.create([UserMessage(content="Is this post true?", source="user")])
        finally:
            await pool.close()
        assert 1 <= server.stats["requests"] <= 3


def test_the_embedded_backend_has_a_deadline_of_a_few_minutes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("M3D_LOCAL_BASE_URL", raising=False)
    local = BackendSettings().get("local")
    assert local.call_deadline_s() == 300.0
    assert local.call_deadline_s(starts_server=True) == 300.0 + local.local.startup_timeout_s
    monkeypatch.setenv("M3D_LOCAL_BASE_URL", "http://127.0.0.1:9/v1")
    assert local.call_deadline_s(starts_server=True) == 300.0, "no start-up time for a server that is already running"
    assert BackendSettings().get("openai").call_deadline_s() == 300.0


class SingleSlot:
    """A server that answers one request at a time, as llama-cpp-python's does: the others wait inside it."""

    def __init__(self, service_s: float) -> None:
        import threading

        self.service_s = service_s
        self.slot = threading.Lock()
        self.in_flight = 0
        self.most_in_flight = 0
        self.count = threading.Lock()

    def __call__(self, body: dict[str, object], _n: int) -> tuple[int, dict[str, object], float]:
        import time

        from tests.support.openai_stub_server import completion_body

        with self.count:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        with self.slot:
            time.sleep(self.service_s)
        with self.count:
            self.in_flight -= 1
        return 200, completion_body("FINAL ANSWER: fake"), 0.0


async def test_a_call_waiting_for_the_single_slot_is_not_timed_out_by_the_calls_before_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Five calls at once to a one-slot server that takes 0.3 s a call: the last is answered after about 1.5 s, but it
    is answered for 0.3 s of that, so a deadline of 1 s holds for every call; and the server never holds two at once."""
    import asyncio

    from tests.support.openai_stub_server import StubOpenAIServer

    server_side = SingleSlot(service_s=0.3)
    with StubOpenAIServer(server_side) as server:
        monkeypatch.setenv("M3D_LOCAL_BASE_URL", server.base_url)
        config = BackendConfig(kind="local", timeout_s=30.0, transport_retries=0, deadline_s=1.0, cache=False)
        pool = BackendPool(BackendSettings(backends={"local": config}))
        try:
            backend = pool.get("local")
            ledger = UsageLedger()
            calls = [backend.view(ledger, agent=f"seat_{i}", role="debater").create(
                [UserMessage(content=f"Is post {i} true?", source="user")]) for i in range(5)]
            results = await asyncio.gather(*calls)
        finally:
            await pool.close()
    assert [r.content for r in results] == ["FINAL ANSWER: fake"] * 5
    assert server_side.most_in_flight == 1, "the server's single slot is never asked for twice at once"
    assert all(record.latency_s < 1.0 for record in ledger.records), "each call's time is the time it was answered"


def test_the_local_backend_has_one_slot_unless_its_server_has_more() -> None:
    assert BackendSettings().get("local").slots == 1
    assert BackendConfig(kind="local", local={"slots": 4}, concurrency=2).slots == 2  # type: ignore[arg-type]
    assert BackendSettings().get("vllm").slots is None


async def test_each_call_records_how_long_it_waited_for_the_backend_apart_from_how_long_it_was_answered() -> None:
    """Three calls at once to a backend that answers one at a time (0.2 s each): the second waits behind the first,
    the third behind both; the wait is kept apart from the answering time and summed in the accounting."""
    import asyncio

    from tests.support.scripted import ScriptedClient, scripted_backend

    backend = scripted_backend(ScriptedClient(["FINAL ANSWER: fake"] * 3, delay_s=0.2), concurrency=1)
    ledger = UsageLedger()
    await asyncio.gather(*(backend.view(ledger, agent=f"seat_{i}", role="debater").create(
        [UserMessage(content=f"Is post {i} true?", source="user")]) for i in range(3)))
    waits = sorted(record.wait_s for record in ledger.records)
    assert waits[1] >= 0.19 and waits[2] >= 0.39, waits  # asyncio.sleep never ends early: these are lower bounds
    assert all(record.latency_s >= 0.19 for record in ledger.records)
    assert ledger.accounting().wait_s == pytest.approx(sum(waits), abs=1e-3)
