"""Teams run on the quiet runtime unless someone receives AutoGen's telemetry; debates are the same on both."""

from __future__ import annotations

import logging
from contextlib import nullcontext

import autogen_agentchat.agents._base_chat_agent as base_chat_agent
import autogen_agentchat.teams._group_chat._chat_agent_container as chat_agent_container
import pytest

import debates.groupchat.team
from autogen_core import EVENT_LOGGER_NAME, ROOT_LOGGER_NAME, SingleThreadedAgentRuntime

from debates.config_loader import load_config
from debates.session import run_sample
from debates.groupchat.runtime import QuietRuntime, team_runtime, telemetry_wanted
from tests.support.debate import SAMPLE, answer, seat_pool

SCRIPTS = {
    "agent_a": [answer("fake", "A1"), answer("real", "A2")],
    "agent_b": [answer("real", "B1"), answer("real", "B2")],
    "agent_c": [answer("real", "C1"), answer("real", "C2")],
}


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


def test_quiet_unless_someone_listens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AUTOGEN_DISABLE_RUNTIME_TRACING", raising=False)
    assert not telemetry_wanted()
    assert isinstance(team_runtime(), QuietRuntime)
    for name in (EVENT_LOGGER_NAME, ROOT_LOGGER_NAME):
        logger = logging.getLogger(name)
        level = logger.level
        logger.setLevel(logging.INFO)
        try:
            assert telemetry_wanted(), f"{name} at INFO gets the runtime that writes its records"
            assert type(team_runtime()) is SingleThreadedAgentRuntime
        finally:
            logger.setLevel(level)


async def test_the_same_debate_on_either_runtime(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[SingleThreadedAgentRuntime] = []

    def recording() -> SingleThreadedAgentRuntime:
        made.append(team_runtime())
        return made[-1]

    monkeypatch.setattr(debates.groupchat.team, "team_runtime", recording)
    config, pool, clients = seat_pool(load_config("async-three"), SCRIPTS)
    quiet = await run_sample(config, SAMPLE, pool)

    events = logging.getLogger(EVENT_LOGGER_NAME)
    handler, level = Collect(), events.level
    events.addHandler(handler)
    events.setLevel(logging.INFO)
    try:
        config, pool, clients = seat_pool(load_config("async-three"), SCRIPTS)
        full = await run_sample(config, SAMPLE, pool)
    finally:
        events.removeHandler(handler)
        events.setLevel(level)

    assert isinstance(made[0], QuietRuntime) and type(made[1]) is SingleThreadedAgentRuntime
    assert [(t.speaker, t.stance) for t in quiet.transcript] == [(t.speaker, t.stance) for t in full.transcript]
    assert [t.speaker for t in quiet.transcript] == ["agent_a", "agent_b", "agent_c", "agent_a"]
    assert quiet.label == full.label == "real"
    assert quiet.accounting.model_calls == full.accounting.model_calls == 4
    payloads = [r.msg.kwargs["payload"] for r in handler.records if hasattr(r.msg, "kwargs")]
    assert payloads and all(payloads), "with the event log on, every message event carries its payload"


def test_config_loads_are_independent_copies() -> None:
    first = load_config("async-three")
    first.seats[0].name = "changed"
    first.max_rounds = 9
    again = load_config("async-three")
    assert again.seats[0].name == "agent_a" and again.max_rounds == 3


def test_agent_invocations_open_no_span_unless_someone_listens(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AUTOGEN_DISABLE_RUNTIME_TRACING", raising=False)
    for module in (chat_agent_container, base_chat_agent):
        span = module.trace_invoke_agent_span(agent_name="agent_a", agent_description="a debater")
        assert isinstance(span, nullcontext), f"{module.__name__} opens a span that nobody receives"
    events = logging.getLogger(EVENT_LOGGER_NAME)
    level = events.level
    events.setLevel(logging.INFO)
    try:
        span = chat_agent_container.trace_invoke_agent_span(agent_name="agent_a", agent_description="a debater")
        assert not isinstance(span, nullcontext), "with the event log on, the span is AutoGen's own"
    finally:
        events.setLevel(level)
