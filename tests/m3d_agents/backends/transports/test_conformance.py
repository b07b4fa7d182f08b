"""One contract for both transports: the lean HTTP client and AutoGen's SDK client, against the loopback stub.

Every test but the cross-check runs once per transport: what goes on the wire, which failures are
retried and how long the client waits, which error a failure becomes, usage, structured output,
cancellation, and that no error text carries the key.
"""

from __future__ import annotations

import asyncio
import email.utils
import json
import time
import traceback
from typing import Any, Callable

import pytest
from autogen_core import CancellationToken, FunctionCall
from autogen_core import Image as AgentImage
from autogen_core.models import (
    AssistantMessage,
    ChatCompletionClient,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    ModelInfo,
    SystemMessage,
    UserMessage,
)
from autogen_core.tools import FunctionTool
from PIL import Image
from pydantic import BaseModel

from m3d_agents.backends.transports import retry
from m3d_agents.backends.transports.lean_http import OpenAICompatibleClient
from m3d_agents.backends.transports.schemas import json_schema_of, structured_create_args
from m3d_agents.backends.transports.sdk import SdkClient
from m3d_agents.errors import BackendError, EndpointRefused
from tests.support.openai_stub_server import Reply, StubOpenAIServer, completion_body

KEY = "sk-test-CONFORMANCE-SECRET"
TEXT_ONLY = ModelInfo(vision=False, function_calling=True, json_output=True, family="unknown",
                      structured_output=True, multiple_system_messages=False)
VISION = ModelInfo(vision=True, function_calling=True, json_output=True, family="unknown",
                   structured_output=True, multiple_system_messages=True)
LLAMA_CPP = ModelInfo(vision=False, function_calling=False, json_output=True, family="unknown",
                      structured_output=False, multiple_system_messages=False)
TRANSPORTS = {"http": OpenAICompatibleClient, "sdk": SdkClient}

# AutoGen warns when a server names its model differently from the request; the SDK transport
# silences it for the product, but pytest shows every warning.
pytestmark = pytest.mark.filterwarnings("ignore:Resolved model mismatch")


@pytest.fixture(params=sorted(TRANSPORTS))
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def client_for(transport: str, url: str, info: ModelInfo = TEXT_ONLY, **kwargs: Any) -> ChatCompletionClient:
    # Refused connections count as attempts here (restart_wait_s 0); their wait in time is test_restart_wait.py's.
    settings: dict[str, Any] = {"max_retries": 0, "timeout_s": 5.0, "api_key": KEY, "restart_wait_s": 0.0, **kwargs}
    return TRANSPORTS[transport](base_url=url, model="m", model_info=info, **settings)


def answering(text: str) -> Callable[[dict[str, Any], int], tuple[int, Any, float]]:
    return lambda body, n: (200, completion_body(text), 0.0)


def ask(text: str = "q") -> list[LLMMessage]:
    return [UserMessage(content=text, source="u")]


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[tuple[int, float | None]]:
    """The backoff each retry asked for, with the waiting itself skipped (the schedule is tested on its own)."""
    asked: list[tuple[int, float | None]] = []

    def record(attempt: int, retry_after: float | None = None) -> float:
        asked.append((attempt, retry_after))
        return 0.0

    monkeypatch.setattr(retry, "backoff_s", record)
    return asked


# --- what goes on the wire ---------------------------------------------------------------------

async def test_request_carries_defaults_key_and_overrides(transport: str) -> None:
    with StubOpenAIServer(answering("ok")) as server:
        client = client_for(transport, server.base_url, temperature=0.2, max_tokens=64, seed=7)
        result = await client.create(ask("hi"), extra_create_args={"seed": 9})
        await client.close()
    body = server.requests[0]
    assert body["model"] == "m" and body["temperature"] == 0.2 and body["max_tokens"] == 64
    assert body["seed"] == 9
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert "response_format" not in body and "tools" not in body
    assert server.authorization(0) == f"Bearer {KEY}"
    assert result.content == "ok" and result.finish_reason == "stop" and result.cached is False
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (12, 7)
    assert client.total_usage().prompt_tokens == 12


async def test_a_client_without_a_key_sends_the_placeholder(transport: str) -> None:
    with StubOpenAIServer(answering("ok")) as server:
        client = client_for(transport, server.base_url, api_key=None)
        await client.create(ask())
        await client.close()
    assert server.authorization(0) == f"Bearer {retry.NO_KEY}"


async def test_system_messages_merge_for_servers_that_take_one(transport: str) -> None:
    with StubOpenAIServer(answering("ok")) as server:
        client = client_for(transport, server.base_url)
        await client.create([SystemMessage(content="first"), UserMessage(content="q", source="u"), SystemMessage(content="second")])
        await client.close()
    messages = server.requests[0]["messages"]
    assert messages[0] == {"role": "system", "content": "first\n\nsecond"}
    assert [m["role"] for m in messages] == ["system", "user"]


async def test_images_become_parts_and_a_text_only_model_refuses_them(transport: str) -> None:
    image = AgentImage.from_pil(Image.new("RGB", (4, 4), "red"))
    with StubOpenAIServer(answering("ok")) as server:
        client = client_for(transport, server.base_url, VISION)
        await client.create([SystemMessage(content="a"), SystemMessage(content="b"), UserMessage(content=["look", image], source="u")])
        await client.close()
        blind = client_for(transport, server.base_url)
        with pytest.raises(BackendError, match="no vision"):
            await blind.create([UserMessage(content=["look", image], source="u")])
        await blind.close()
    messages = server.requests[0]["messages"]
    assert [m["role"] for m in messages] == ["system", "system", "user"]
    parts = messages[2]["content"]
    assert parts[0] == {"type": "text", "text": "look"}
    assert parts[1]["type"] == "image_url" and parts[1]["image_url"]["url"].startswith("data:image/")
    assert len(server.requests) == 1


class Answer(BaseModel):
    label: str


async def test_json_output_requests_a_schema_a_json_object_or_nothing(transport: str) -> None:
    with StubOpenAIServer(answering('{"label": "fake"}')) as server:
        client = client_for(transport, server.base_url)
        await client.create(ask(), json_output=Answer)
        await client.create(ask(), json_output=True)
        await client.create(ask(), json_output=False)
        await client.close()
    first, second = (r["response_format"] for r in server.requests[:2])
    assert first == {"type": "json_schema", "json_schema": {"name": "Answer", "schema": json_schema_of(Answer)}}
    assert first["json_schema"]["schema"]["properties"]["label"]["type"] == "string"
    assert second == {"type": "json_object"}
    assert "response_format" not in server.requests[2]


@pytest.mark.parametrize("info, strict", [(TEXT_ONLY, True), (TEXT_ONLY, False), (LLAMA_CPP, True)])
async def test_structured_output_is_sent_as_built_and_answered_as_text(transport: str, info: ModelInfo, strict: bool) -> None:
    """vLLM's strict ``json_schema`` and llama.cpp's ``json_object`` with a ``schema`` key reach the server untouched."""
    args = structured_create_args(info, Answer, strict=strict)
    with StubOpenAIServer(answering('{"label": "fake"}')) as server:
        client = client_for(transport, server.base_url, info)
        result = await client.create(ask(), **args)
        await client.close()
    assert server.requests[0]["response_format"] == args["extra_create_args"]["response_format"]
    assert isinstance(result.content, str) and Answer.model_validate_json(result.content).label == "fake"


async def test_server_specific_arguments_reach_the_body(transport: str) -> None:
    """vLLM takes sampling and template settings that the OpenAI API does not know."""
    extra = {"top_k": 20, "chat_template_kwargs": {"enable_thinking": False}, "top_p": 0.9}
    with StubOpenAIServer(answering("ok")) as server:
        client = client_for(transport, server.base_url)
        await client.create(ask(), extra_create_args=extra)
        await client.close()
    body = server.requests[0]
    assert {k: body[k] for k in extra} == extra


def add(a: int, b: int) -> int:
    return a + b


async def test_tool_calls_round_trip(transport: str) -> None:
    tool = FunctionTool(add, description="add two numbers")
    calls = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}]}
    reply = {**completion_body(""), "choices": [{"index": 0, "message": calls, "finish_reason": "tool_calls"}]}
    with StubOpenAIServer(lambda body, n: (200, reply, 0.0)) as server:
        client = client_for(transport, server.base_url)
        result = await client.create(ask("1+2?"), tools=[tool])
        await client.create(ask("1+2?"), tools=[tool], tool_choice=tool)
        await client.create([
            UserMessage(content="1+2?", source="u"),
            AssistantMessage(content=[FunctionCall(id="call_1", name="add", arguments='{"a": 1, "b": 2}')], source="m"),
            FunctionExecutionResultMessage(content=[FunctionExecutionResult(call_id="call_1", content="3", name="add")]),
        ])
        await client.close()
    assert result.finish_reason == "function_calls"
    assert result.content == [FunctionCall(id="call_1", name="add", arguments='{"a": 1, "b": 2}')]
    assert server.requests[0]["tools"] == [{"type": "function", "function": {
        "name": "add", "description": "add two numbers", "parameters": tool.schema["parameters"], "strict": False}}]
    assert server.requests[0]["tool_choice"] == "auto"
    assert server.requests[1]["tool_choice"] == {"type": "function", "function": {"name": "add"}}
    sent = server.requests[2]["messages"]
    assert sent[1] == {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}]}
    assert sent[2] == {"role": "tool", "tool_call_id": "call_1", "content": "3"}


async def test_both_transports_send_the_same_bodies() -> None:
    """The cross-check: a batch of requests of every shape, byte for byte the same JSON from each transport."""
    image = AgentImage.from_pil(Image.new("RGB", (4, 4), "blue"))
    tool = FunctionTool(add, description="add two numbers")
    requests: list[tuple[ModelInfo, list[LLMMessage], dict[str, Any]]] = [
        (TEXT_ONLY, [SystemMessage(content="s1"), UserMessage(content="q", source="u"), SystemMessage(content="s2")], {}),
        (VISION, [SystemMessage(content="a"), SystemMessage(content="b"), UserMessage(content=["see", image, "this"], source="u")], {}),
        (TEXT_ONLY, ask(), {"json_output": Answer}),
        (TEXT_ONLY, ask(), {"json_output": True}),
        (TEXT_ONLY, ask(), structured_create_args(TEXT_ONLY, Answer)),
        (LLAMA_CPP, ask(), structured_create_args(LLAMA_CPP, Answer)),
        (TEXT_ONLY, ask(), {"tools": [tool], "tool_choice": "required"}),
        (TEXT_ONLY, [UserMessage(content="q", source="u"), AssistantMessage(content="an earlier answer", source="m"),
                     UserMessage(content="again", source="u")], {"extra_create_args": {"seed": 3, "temperature": 0.9}}),
    ]
    bodies: dict[str, list[dict[str, Any]]] = {}
    for transport in sorted(TRANSPORTS):
        with StubOpenAIServer(answering("ok")) as server:
            for info, messages, kwargs in requests:
                client = client_for(transport, server.base_url, info, temperature=0.2, max_tokens=64, seed=7)
                await client.create(messages, **kwargs)
                await client.close()
        bodies[transport] = server.requests
    assert len(bodies["http"]) == len(requests)
    for http_body, sdk_body in zip(bodies["http"], bodies["sdk"]):
        assert http_body == sdk_body


# --- retries -----------------------------------------------------------------------------------

FAILURES: dict[str, Reply] = {
    "408": Reply(408, {"error": {"message": "request timeout"}}),
    "409": Reply(409, {"error": {"message": "conflict"}}),
    "429": Reply(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "0"}),
    "500": Reply(500, {"error": {"message": "internal error"}}),
    "502 page": Reply(502, b"<html>bad gateway</html>", content_type="text/html"),
    "503": Reply(503, {"error": {"message": "overloaded"}}),
    "504": Reply(504, {"error": {"message": "gateway timeout"}}),
    "connection drop": Reply(drop=True),
    "timeout": Reply(200, completion_body("late"), delay_s=2.0),
    "200 not JSON": Reply(200, b"<html>proxy error</html>"),
    "200 HTML page": Reply(200, b"<html>proxy error</html>", content_type="text/html"),
}


@pytest.mark.parametrize("failure", sorted(FAILURES))
async def test_transient_failures_are_retried(transport: str, failure: str, waits: list[tuple[int, float | None]]) -> None:
    def respond(body: dict[str, Any], n: int) -> Reply:
        return FAILURES[failure] if n == 1 else Reply(200, completion_body("finally"))

    with StubOpenAIServer(respond) as server:
        client = client_for(transport, server.base_url, max_retries=2, timeout_s=0.5)
        result = await client.create(ask())
        await client.close()
    assert result.content == "finally" and len(server.requests) == 2
    assert server.requests[0] == server.requests[1]
    assert [attempt for attempt, _ in waits] == [1]
    assert client.total_usage().prompt_tokens == 12


async def test_retries_429_and_5xx_honouring_retry_after(transport: str) -> None:
    def respond(body: dict[str, Any], n: int) -> tuple[int, Any, float]:
        if n == 1:
            return 429, {"error": {"message": "slow down"}}, 0.0
        if n == 2:
            return 502, b"<html>bad gateway</html>", 0.0
        return 200, completion_body("finally"), 0.0

    with StubOpenAIServer(respond) as server:
        client = client_for(transport, server.base_url, max_retries=2)
        result = await client.create(ask())
        await client.close()
    assert result.content == "finally" and len(server.requests) == 3


@pytest.mark.parametrize("headers, wait", [
    ({"Retry-After": "2"}, 2.0),
    ({"retry-after-ms": "1500", "Retry-After": "9"}, 1.5),
    ({"Retry-After": "a while"}, None),
    ({}, None),
])
async def test_backoff_takes_the_wait_the_server_asked_for(
    transport: str, waits: list[tuple[int, float | None]], headers: dict[str, str], wait: float | None
) -> None:
    def respond(body: dict[str, Any], n: int) -> Reply:
        if n <= 2:
            status = (429 if headers else 500) if n == 1 else 503
            return Reply(status, {"error": {"message": "busy"}}, headers=headers)
        return Reply(200, completion_body("ok"))

    with StubOpenAIServer(respond) as server:
        client = client_for(transport, server.base_url, max_retries=3)
        await client.create(ask())
        await client.close()
    assert waits == [(1, wait), (2, wait)]


async def test_retry_after_is_honoured_on_the_wire(transport: str) -> None:
    def respond(body: dict[str, Any], n: int) -> Reply:
        if n == 1:
            return Reply(429, {"error": {"message": "slow down"}}, headers={"Retry-After": "1"})
        return Reply(200, completion_body("ok"))

    with StubOpenAIServer(respond) as server:
        client = client_for(transport, server.base_url, max_retries=1)
        await client.create(ask())
        await client.close()
    assert server.times[1] - server.times[0] >= 0.95


def test_the_backoff_schedule() -> None:
    assert retry.backoff_s(1, retry_after=0.0) == 0.0
    assert retry.backoff_s(3, retry_after=600.0) == 60.0
    assert 1.5 <= retry.backoff_s(3) <= 2.5
    assert 0.375 <= retry.backoff_s(1) <= 0.625
    assert retry.backoff_s(10) <= 8.0 * 1.25
    in_a_minute = email.utils.formatdate(time.time() + 60, usegmt=True)
    assert 55 <= (retry.retry_after_s({"retry-after": in_a_minute}) or 0) <= 61
    assert retry.retry_after_s({"retry-after": "-3"}) == 0.0


# --- errors ------------------------------------------------------------------------------------

async def test_retries_run_out_with_the_last_problem_named(transport: str, waits: list[tuple[int, float | None]]) -> None:
    with StubOpenAIServer(lambda body, n: (503, {"error": {"message": "overloaded"}}, 0.0)) as server:
        client = client_for(transport, server.base_url, max_retries=1)
        with pytest.raises(BackendError, match=r"after 2 attempts \(HTTP 503: overloaded\)") as caught:
            await client.create(ask())
        await client.close()
    assert not isinstance(caught.value, EndpointRefused)
    assert server.base_url in str(caught.value)
    assert len(server.requests) == 2


@pytest.mark.parametrize("status, message", [
    (400, "context length exceeded"), (401, "Incorrect API key provided"), (403, "forbidden"),
    (404, "no such model"), (422, "unprocessable"),
])
async def test_a_refused_request_is_not_retried(transport: str, status: int, message: str) -> None:
    with StubOpenAIServer(lambda body, n: (status, {"error": {"message": message}}, 0.0)) as server:
        client = client_for(transport, server.base_url, max_retries=3)
        with pytest.raises(EndpointRefused, match=rf"\({status}\): {message}") as caught:
            await client.create(ask())
        await client.close()
    assert caught.value.status == status and len(server.requests) == 1
    assert f"{server.base_url}/chat/completions" in str(caught.value)


@pytest.mark.parametrize("content_type", ["application/json", "text/html"])
async def test_a_body_that_is_not_json_is_retried_then_names_the_endpoint(
    transport: str, content_type: str, waits: list[tuple[int, float | None]]
) -> None:
    page = b"<html>502 from the proxy</html>"
    with StubOpenAIServer(lambda body, n: Reply(200, page, content_type=content_type)) as server:
        client = client_for(transport, server.base_url, max_retries=2)
        with pytest.raises(BackendError, match="not JSON") as caught:
            await client.create(ask())
        await client.close()
    assert len(server.requests) == 3
    assert f"the model endpoint {server.base_url}/chat/completions did not answer after 3 attempts" in str(caught.value)
    assert "502 from the proxy" in str(caught.value)


@pytest.mark.parametrize("body", [{"id": "x", "choices": []}, {"object": "list", "data": []}, [1, 2], "text"])
async def test_json_that_is_not_a_completion_is_a_clear_error(transport: str, body: Any) -> None:
    raw = json.dumps(body).encode()
    with StubOpenAIServer(lambda request, n: (200, raw, 0.0)) as server:
        client = client_for(transport, server.base_url, max_retries=2)
        with pytest.raises(BackendError, match="not a chat completion"):
            await client.create(ask())
        await client.close()
    assert len(server.requests) == 1


async def test_a_dead_endpoint_is_a_backend_error(transport: str, waits: list[tuple[int, float | None]]) -> None:
    client = client_for(transport, "http://127.0.0.1:9/v1", max_retries=1)
    with pytest.raises(BackendError, match=r"127\.0\.0\.1:9/v1/chat/completions did not answer after 2 attempts"):
        await client.create(ask())
    await client.close()


async def test_a_slow_answer_times_out(transport: str) -> None:
    with StubOpenAIServer(lambda body, n: (200, completion_body("late"), 3.0)) as server:
        client = client_for(transport, server.base_url, timeout_s=0.2)
        started = time.monotonic()
        with pytest.raises(BackendError, match=r"did not answer after 1 attempt \(timed out after 0.2 s\)"):
            await client.create(ask())
        assert time.monotonic() - started < 2.5
        await client.close()


@pytest.mark.parametrize("reply", [
    Reply(401, {"error": {"message": "Incorrect API key provided: Bearer " + KEY}}),
    Reply(500, {"error": {"message": f"upstream rejected key {KEY}"}}),
    Reply(200, b"<html>your header was Authorization: Bearer " + KEY.encode() + b"</html>"),
    Reply(200, json.dumps({"echo": f"Bearer {KEY}"}).encode()),
])
async def test_no_error_carries_the_key(transport: str, reply: Reply, waits: list[tuple[int, float | None]]) -> None:
    """Some servers and proxies echo the Authorization header; none of it reaches an error's text or traceback."""
    with StubOpenAIServer(lambda body, n: reply) as server:
        client = client_for(transport, server.base_url, max_retries=1)
        with pytest.raises(BackendError) as caught:
            await client.create(ask())
        await client.close()
    assert server.authorization(0) == f"Bearer {KEY}"
    shown = "".join(traceback.format_exception(caught.value)) + repr(caught.value) + repr(client)
    assert KEY not in shown and "CONFORMANCE" not in shown
    assert "Bearer ***" in str(caught.value) or "***" in str(caught.value)


# --- usage, streaming, cancellation, event loops -----------------------------------------------

async def test_usage_totals_add_up(transport: str) -> None:
    sizes = iter([(10, 3), (20, 5)])
    with StubOpenAIServer(lambda body, n: (200, completion_body("ok", *next(sizes)), 0.0)) as server:
        client = client_for(transport, server.base_url)
        first = await client.create(ask())
        second = await client.create(ask())
        await client.close()
    assert (first.usage.prompt_tokens, second.usage.completion_tokens) == (10, 5)
    assert (client.total_usage().prompt_tokens, client.total_usage().completion_tokens) == (30, 8)
    assert (client.actual_usage().prompt_tokens, client.actual_usage().completion_tokens) == (30, 8)


async def test_token_estimates_are_the_same(transport: str) -> None:
    messages = [SystemMessage(content="be brief"), UserMessage(content="x" * 400, source="u")]
    client = client_for(transport, "http://127.0.0.1:9/v1", context_window=1000)
    assert client.count_tokens(messages) == OpenAICompatibleClient(
        base_url="http://127.0.0.1:9/v1", model="m", model_info=TEXT_ONLY).count_tokens(messages)
    assert client.remaining_tokens(messages) == 1000 - client.count_tokens(messages)


async def test_stream_yields_the_answer_then_the_result(transport: str) -> None:
    with StubOpenAIServer(answering("whole")) as server:
        client = client_for(transport, server.base_url)
        chunks = [c async for c in client.create_stream(ask())]
        await client.close()
    assert chunks[0] == "whole" and chunks[-1].content == "whole"  # type: ignore[union-attr]
    assert len(server.requests) == 1


@pytest.mark.parametrize("reply", [
    Reply(200, completion_body("too late"), delay_s=10.0),
    Reply(503, {"error": {"message": "busy"}}, headers={"Retry-After": "30"}),
], ids=["mid-request", "mid-backoff"])
async def test_a_cancelled_token_stops_the_call_promptly(transport: str, reply: Reply) -> None:
    with StubOpenAIServer(lambda body, n: reply) as server:
        client = client_for(transport, server.base_url, max_retries=3, timeout_s=30.0)
        token = CancellationToken()
        call = asyncio.ensure_future(client.create(ask(), cancellation_token=token))
        deadline = time.monotonic() + 10
        while not server.requests and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.2)
        cancelled_at = time.monotonic()
        token.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        assert time.monotonic() - cancelled_at < 2.0
        await client.close()
    assert len(server.requests) == 1


def test_one_client_serves_successive_event_loops(transport: str) -> None:
    """A notebook runs each cell's debate in its own loop; the client must follow."""
    with StubOpenAIServer(answering("ok")) as server:
        client = client_for(transport, server.base_url)
        for _ in range(2):
            result = asyncio.run(client.create(ask()))
            assert result.content == "ok"
        asyncio.run(client.close())
    assert len(server.requests) == 2
    assert client.total_usage().prompt_tokens == 24
