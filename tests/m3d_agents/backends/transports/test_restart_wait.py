"""A model server that refuses connections for a while, then comes up: both transports wait for it in
time (``restart_wait_s``), not in attempts, outside the call's deadline, and say so while they wait.

The server is a loopback stub started on a port where nothing listened before, so every attempt until
then is refused, as while a vLLM server loads its weights (tests/vllm/test_restart.py is the real one).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Iterator

import pytest
from autogen_core.models import UserMessage

from m3d_agents.backends.config import BackendConfig
from m3d_agents.backends.factory import build_backend
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.backends.transports import outage
from m3d_agents.backends.transports.outage import notes_to
from m3d_agents.errors import BackendError
from tests.support.openai_stub_server import StubOpenAIServer, completion_body
from tests.support.vllm_server import free_port

pytestmark = pytest.mark.filterwarnings("ignore:Resolved model mismatch")

QUESTION = [UserMessage(content="Is the storm picture real?", source="u")]
TRANSPORTS = ("http", "sdk")


def config(port: int, transport: str, **settings: object) -> BackendConfig:
    values: dict[str, object] = {"kind": "vllm", "base_url": f"http://127.0.0.1:{port}/v1", "model": "m", "cache": False,
                                 "transport": transport, "transport_retries": 0, **settings}
    return BackendConfig.model_validate(values)


def later(port: int, after_s: float) -> tuple[asyncio.Task[None], list[StubOpenAIServer]]:
    """A stub that starts answering on ``port`` after ``after_s`` seconds (stopped by :func:`stop`)."""
    started: list[StubOpenAIServer] = []

    async def come_up() -> None:
        await asyncio.sleep(after_s)
        server = StubOpenAIServer(lambda body, n: (200, completion_body("back"), 0.0), port=port)
        started.append(server.__enter__())

    return asyncio.ensure_future(come_up()), started


def stop(servers: list[StubOpenAIServer]) -> None:
    for server in servers:
        server.__exit__(None, None, None)


@pytest.fixture(autouse=True)
def quick_reminders(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(outage, "REMIND_S", 0.2)
    yield


async def test_both_transports_wait_for_a_server_that_comes_up_and_say_so() -> None:
    port = free_port()
    backends = [build_backend(config(port, transport, restart_wait_s=60.0)) for transport in TRANSPORTS]
    notes: list[str] = []
    with notes_to(notes.append):
        # No attempt is left to count (transport_retries 0): only the time budget keeps the calls going.
        calls = [asyncio.ensure_future(backend.client.create(QUESTION)) for backend in backends]
        coming, servers = later(port, 1.5)
        try:
            await asyncio.sleep(1.0)
            assert not any(call.done() for call in calls)
            results = await asyncio.gather(*calls)
            await coming
        finally:
            stop(servers)
            for backend in backends:
                await backend.close()
    assert [r.content for r in results] == ["back", "back"]
    assert len(servers[0].requests) == 2
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    assert notes[0] == (f"the model endpoint {url} refuses connections (nothing listens there yet: a server starting or "
                        "restarting); calls wait for it, up to 60 s each (the backend's restart_wait_s)")
    assert sum("refuses connections" in note for note in notes) == 1, "one note for every call that waits on one server"
    assert any(note.startswith(f"still waiting for the model endpoint {url}: it has refused connections for") for note in notes)
    assert notes[-1].startswith(f"the model endpoint {url} answers again, after ")


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_wait_is_counted_in_time_not_attempts(transport: str, caplog: pytest.LogCaptureFixture) -> None:
    port = free_port()
    backend = build_backend(config(port, transport, restart_wait_s=1.0, transport_retries=1000))
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger=outage.__name__), pytest.raises(BackendError) as caught:
        await backend.client.create(QUESTION)
    await backend.close()
    assert time.monotonic() - started >= 1.0
    assert str(caught.value) == (f"the model endpoint http://127.0.0.1:{port}/v1/chat/completions refused connections "
                                 "for 1 s (the backend's restart_wait_s): is its server running at that address?")
    # Without a run listening for notes, the user reads the wait in the log (every command prints warnings).
    assert any("refuses connections" in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_refusal_is_one_more_attempt_without_a_budget(transport: str) -> None:
    port = free_port()
    backend = build_backend(config(port, transport, restart_wait_s=0.0, transport_retries=1))
    with pytest.raises(BackendError, match=r"did not answer after 2 attempts \(.*Connect"):
        await backend.client.create(QUESTION)
    await backend.close()


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_the_wait_is_not_counted_against_the_call_deadline(transport: str) -> None:
    port = free_port()
    backend = build_backend(config(port, transport, restart_wait_s=60.0, deadline_s=0.5))
    metered = backend.view(UsageLedger(), "agent", "role")
    coming, servers = later(port, 2.0)
    try:
        result = await metered.create(QUESTION)
        await coming
    finally:
        stop(servers)
        await backend.close()
    assert result.content == "back"


def test_the_default_budget_covers_a_real_server_restart() -> None:
    field = BackendConfig.model_fields["restart_wait_s"]
    assert BackendConfig().restart_wait_s == 300.0
    assert field.description and "refuses connections" in field.description
