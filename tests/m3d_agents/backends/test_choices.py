"""Several answers to one request: what goes on the wire, what the ledger bills, what the cache keeps,
and how a caller gets n answers from a backend that can, cannot, or answers fewer than asked."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from autogen_core.models import UserMessage

from m3d_agents.asking import ask_choices
from m3d_agents.backends.choices import can_sample_choices
from m3d_agents.backends.config import BackendConfig
from m3d_agents.backends.factory import build_backend
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.backends.transports.wire import read_choices
from m3d_agents.errors import BackendError, ParseError
from tests.support.openai_stub_server import StubOpenAIServer
from tests.support.scripted import ScriptedClient, scripted_backend

QUESTION = [UserMessage(content="Name a colour.", source="user")]


@pytest.fixture(autouse=True)
def no_endpoint_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("M3D_VLLM_BASE_URL", raising=False)


def choices_body(texts: list[str], prompt_tokens: int = 30, completion_tokens: int = 8) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()), "model": "test-model",
        "choices": [{"index": i, "message": {"role": "assistant", "content": t}, "finish_reason": "stop"}
                    for i, t in enumerate(texts)],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


def answering_n(body: dict[str, Any], number: int) -> tuple[int, dict[str, Any], float]:
    """A server that honours ``n``: choice i says which request and which choice it is."""
    n = int(body.get("n", 1))
    return 200, choices_body([f"colour {number}.{i}" for i in range(n)], completion_tokens=4 * n), 0.0


def upper(text: str) -> str:
    if "bad" in text:
        raise ParseError("a colour", "not a colour", text)
    return text.upper()


async def test_one_request_asks_for_n_choices_and_the_ledger_bills_its_prompt_once() -> None:
    with StubOpenAIServer(answering_n) as server:
        backend = build_backend(BackendConfig(kind="vllm", base_url=server.base_url, cache=False))
        ledger = UsageLedger()
        client = backend.view(ledger, agent="searcher", role="step")
        try:
            assert can_sample_choices(client)
            choices = await client.create_choices(QUESTION, 2, extra_create_args={"seed": 7, "temperature": 0.7})
        finally:
            await backend.close()
    assert [r.content for r in choices.results] == ["colour 1.0", "colour 1.1"]
    assert server.requests[0]["n"] == 2 and server.requests[0]["seed"] == 7
    accounting = ledger.accounting()
    assert accounting.model_calls == 1
    assert (accounting.prompt_tokens, accounting.completion_tokens) == (30, 8), "the prompt once, both completions"
    assert accounting.by_role["step"].calls == 1


async def test_the_response_cache_keeps_the_choices_of_a_request_together(tmp_path: Path) -> None:
    config = BackendConfig(kind="vllm", cache_dir=tmp_path)
    with StubOpenAIServer(answering_n) as server:
        for _ in range(2):
            backend = build_backend(config.with_overrides(base_url=server.base_url))
            ledger = UsageLedger()
            try:
                view = backend.view(ledger, agent="a", role="step")
                assert can_sample_choices(view), "the cache does not hide that its client answers several choices"
                choices = await view.create_choices(QUESTION, 2, extra_create_args={"seed": 3})
            finally:
                await backend.close()
        assert len(server.requests) == 1, "the second run was answered from the cache"
    assert [r.content for r in choices.results] == ["colour 1.0", "colour 1.1"] and choices.cached
    assert (ledger.accounting().prompt_tokens, ledger.accounting().cache_hits) == (30, 1)


async def test_a_server_that_ignores_n_is_asked_again_for_the_missing_choice() -> None:
    def once(body: dict[str, Any], number: int) -> tuple[int, dict[str, Any], float]:
        return 200, choices_body([f"colour {number}"]), 0.0

    with StubOpenAIServer(once) as server:
        backend = build_backend(BackendConfig(kind="vllm", base_url=server.base_url, cache=False))
        try:
            answers = await ask_choices(backend.view(UsageLedger(), "a", "step"), QUESTION, upper, 2, retries=0,
                                        create_kwargs={"extra_create_args": {"seed": 10}})
        finally:
            await backend.close()
    assert [a.value for a in answers] == ["COLOUR 1", "COLOUR 2"]
    assert [(r.get("n"), r["seed"]) for r in server.requests] == [(2, 10), (None, 11)]


async def test_choices_are_separate_seeded_calls_on_a_client_that_cannot_answer_several() -> None:
    client = ScriptedClient(lambda messages, kwargs: f"colour {kwargs['seed']}")
    ledger = UsageLedger()
    view = scripted_backend(client).view(ledger, "a", "step")
    assert not can_sample_choices(view)
    answers = await ask_choices(view, QUESTION, upper, 3, create_kwargs={"extra_create_args": {"seed": 2**31 - 1}})
    assert [a.value for a in answers] == ["COLOUR 2147483647", "COLOUR 0", "COLOUR 1"], "seed plus i, modulo 2**31"
    assert ledger.accounting().model_calls == 3
    with pytest.raises(BackendError, match="cannot answer several choices"):
        await view.create_choices(QUESTION, 2)


async def test_an_unreadable_choice_is_asked_again_alone_with_its_own_seed() -> None:
    def respond(messages: Any, kwargs: dict[str, Any]) -> str:
        return "bad" if kwargs["seed"] == 6 and len(messages) == 1 else f"colour {kwargs['seed']}"

    client = ScriptedClient(respond, samples_choices=True)
    ledger = UsageLedger()
    retries: list[int] = []
    answers = await ask_choices(scripted_backend(client).view(ledger, "a", "step"), QUESTION, upper, 2,
                                create_kwargs={"extra_create_args": {"seed": 5}}, on_retry=lambda: retries.append(1))
    assert [(a.value, a.attempts) for a in answers] == [("COLOUR 5", 1), ("COLOUR 6", 2)]
    assert [c.kwargs.get("n") for c in client.calls] == [2, None] and client.calls[1].kwargs["seed"] == 6
    assert "could not be read" in client.calls[1].prompt and retries == [1]
    assert ledger.accounting().model_calls == 2


async def test_one_request_can_be_declined() -> None:
    client = ScriptedClient(lambda messages, kwargs: f"colour {kwargs['seed']}", samples_choices=True)
    view = scripted_backend(client).view(UsageLedger(), "a", "step")
    answers = await ask_choices(view, QUESTION, upper, 2, create_kwargs={"extra_create_args": {"seed": 1}}, one_request=False)
    assert [a.value for a in answers] == ["COLOUR 1", "COLOUR 2"] and [c.kwargs.get("n") for c in client.calls] == [None, None]


def test_every_choice_of_a_body_is_read_in_index_order_and_a_broken_one_is_an_error() -> None:
    body = choices_body(["a", "b"])
    body["choices"].reverse()
    choices, usage = read_choices(body, "http://127.0.0.1:1/v1/chat/completions")
    assert [c[0] for c in choices] == ["a", "b"] and usage.prompt_tokens == 30
    broken = choices_body(["a", "b"])
    broken["choices"][1] = {"index": 1, "message": "b"}
    with pytest.raises(BackendError, match="not a chat completion"):
        read_choices(broken, "http://127.0.0.1:1/v1/chat/completions")
