"""The lean OpenAI-compatible client: what it sends, what it reads, and how it fails."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from autogen_core import FunctionCall
from autogen_core import Image as AgentImage
from autogen_core.models import (
    AssistantMessage,
    FunctionExecutionResult,
    FunctionExecutionResultMessage,
    ModelInfo,
    SystemMessage,
    UserMessage,
)
from autogen_core.tools import FunctionTool
from PIL import Image
from pydantic import BaseModel

from m3d_agents.backends.config import BackendConfig
from m3d_agents.backends.factory import build_backend
from m3d_agents.backends.transports.lean_http import EndpointRefused, OpenAICompatibleClient, backoff_s, env_proxy
from m3d_agents.errors import BackendError
from tests.support.openai_stub_server import StubOpenAIServer, completion_body

TEXT_ONLY = ModelInfo(vision=False, function_calling=True, json_output=True, family="unknown",
                      structured_output=True, multiple_system_messages=False)
VISION = ModelInfo(vision=True, function_calling=True, json_output=True, family="unknown",
                   structured_output=True, multiple_system_messages=True)


def client_for(url: str, info: ModelInfo = TEXT_ONLY, **kwargs: Any) -> OpenAICompatibleClient:
    settings: dict[str, Any] = {"max_retries": 0, "timeout_s": 5.0, **kwargs}
    return OpenAICompatibleClient(base_url=url, model="m", model_info=info, api_key="sekrit", **settings)


def answering(text: str) -> Any:
    return lambda body, n: (200, completion_body(text), 0.0)


async def test_the_default_transport_is_the_lean_client() -> None:
    backend = build_backend(BackendConfig(kind="vllm", base_url="http://127.0.0.1:9/v1", cache=False))
    assert isinstance(backend.client, OpenAICompatibleClient)
    sdk = build_backend(BackendConfig(kind="vllm", base_url="http://127.0.0.1:9/v1", cache=False, transport="sdk"))
    assert type(sdk.client).__name__ == "OpenAIChatCompletionClient"


async def test_request_carries_defaults_key_and_overrides() -> None:
    with StubOpenAIServer(answering("ok")) as server:
        client = client_for(server.base_url, temperature=0.2, max_tokens=64, seed=7)
        result = await client.create([UserMessage(content="hi", source="u")], extra_create_args={"seed": 9})
        await client.close()
    body = server.requests[0]
    assert body["model"] == "m" and body["temperature"] == 0.2 and body["max_tokens"] == 64
    assert body["seed"] == 9
    assert body["messages"] == [{"role": "user", "content": "hi"}]
    assert server.headers[0]["Authorization"] == "Bearer sekrit"
    assert result.content == "ok" and result.finish_reason == "stop"
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (12, 7)
    assert client.total_usage().prompt_tokens == 12


async def test_system_messages_merge_for_servers_that_take_one() -> None:
    with StubOpenAIServer(answering("ok")) as server:
        client = client_for(server.base_url)
        await client.create([SystemMessage(content="first"), UserMessage(content="q", source="u"), SystemMessage(content="second")])
        await client.close()
    messages = server.requests[0]["messages"]
    assert messages[0] == {"role": "system", "content": "first\n\nsecond"}
    assert [m["role"] for m in messages] == ["system", "user"]


async def test_images_become_parts_and_a_text_only_model_refuses_them() -> None:
    image = AgentImage.from_pil(Image.new("RGB", (4, 4), "red"))
    with StubOpenAIServer(answering("ok")) as server:
        client = client_for(server.base_url, VISION)
        await client.create([SystemMessage(content="a"), SystemMessage(content="b"), UserMessage(content=["look", image], source="u")])
        await client.close()
        with pytest.raises(BackendError, match="no vision"):
            await client_for(server.base_url).create([UserMessage(content=["look", image], source="u")])
    messages = server.requests[0]["messages"]
    assert [m["role"] for m in messages] == ["system", "system", "user"]
    parts = messages[2]["content"]
    assert parts[0] == {"type": "text", "text": "look"}
    assert parts[1]["type"] == "image_url" and parts[1]["image_url"]["url"].startswith("data:image/")
    assert len(server.requests) == 1


class Answer(BaseModel):
    label: str


async def test_json_output_requests_a_schema_or_a_json_object() -> None:
    with StubOpenAIServer(answering('{"label": "fake"}')) as server:
        client = client_for(server.base_url)
        await client.create([UserMessage(content="q", source="u")], json_output=Answer)
        await client.create([UserMessage(content="q", source="u")], json_output=True)
        await client.close()
    first, second = (r["response_format"] for r in server.requests)
    assert first["type"] == "json_schema" and first["json_schema"]["schema"]["properties"]["label"]["type"] == "string"
    assert second == {"type": "json_object"}


async def test_tool_calls_round_trip() -> None:
    def add(a: int, b: int) -> int:
        return a + b

    tool = FunctionTool(add, description="add two numbers")
    calls = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}}]}
    reply = {**completion_body(""), "choices": [{"index": 0, "message": calls, "finish_reason": "tool_calls"}]}
    with StubOpenAIServer(lambda body, n: (200, reply, 0.0)) as server:
        client = client_for(server.base_url)
        result = await client.create([UserMessage(content="1+2?", source="u")], tools=[tool])
        await client.create([
            UserMessage(content="1+2?", source="u"),
            AssistantMessage(content=[FunctionCall(id="call_1", name="add", arguments='{"a": 1, "b": 2}')], source="m"),
            FunctionExecutionResultMessage(content=[FunctionExecutionResult(call_id="call_1", content="3", name="add")]),
        ])
        await client.close()
    assert result.finish_reason == "function_calls"
    assert result.content == [FunctionCall(id="call_1", name="add", arguments='{"a": 1, "b": 2}')]
    assert server.requests[0]["tools"][0]["function"]["name"] == "add"
    assert server.requests[0]["tool_choice"] == "auto"
    sent = server.requests[1]["messages"]
    assert sent[1]["tool_calls"][0]["function"]["name"] == "add"
    assert sent[2] == {"role": "tool", "tool_call_id": "call_1", "content": "3"}


async def test_retries_429_and_5xx_honouring_retry_after() -> None:
    def respond(body: dict, n: int) -> tuple[int, Any, float]:
        if n == 1:
            return 429, {"error": {"message": "slow down"}}, 0.0
        if n == 2:
            return 502, b"<html>bad gateway</html>", 0.0
        return 200, completion_body("finally"), 0.0

    with StubOpenAIServer(respond) as server:
        client = client_for(server.base_url, max_retries=2)
        result = await client.create([UserMessage(content="q", source="u")])
        await client.close()
    assert result.content == "finally" and len(server.requests) == 3
    assert backoff_s(1, retry_after=0.0) == 0.0
    assert backoff_s(3, retry_after=600.0) == 60.0
    assert 1.5 <= backoff_s(3) <= 2.5


async def test_retries_run_out_with_the_last_problem_named() -> None:
    with StubOpenAIServer(lambda body, n: (503, {"error": {"message": "overloaded"}}, 0.0)) as server:
        client = client_for(server.base_url, max_retries=1)
        with pytest.raises(BackendError, match=r"after 2 attempts \(HTTP 503: overloaded\)"):
            await client.create([UserMessage(content="q", source="u")])
        await client.close()
    assert len(server.requests) == 2


async def test_a_refused_request_is_not_retried() -> None:
    with StubOpenAIServer(lambda body, n: (400, {"error": {"message": "context length exceeded"}}, 0.0)) as server:
        client = client_for(server.base_url, max_retries=3)
        with pytest.raises(EndpointRefused, match=r"\(400\): context length exceeded") as caught:
            await client.create([UserMessage(content="q", source="u")])
        await client.close()
    assert caught.value.status == 400 and len(server.requests) == 1


@pytest.mark.parametrize("body, problem", [
    (b"<html>not json</html>", "not JSON"),
    (json.dumps({"id": "x", "choices": []}).encode(), "not a chat completion"),
])
async def test_a_body_that_is_not_a_completion_is_a_clear_error(body: bytes, problem: str) -> None:
    with StubOpenAIServer(lambda request, n: (200, body, 0.0)) as server:
        client = client_for(server.base_url)
        with pytest.raises(BackendError, match=problem):
            await client.create([UserMessage(content="q", source="u")])
        await client.close()


async def test_a_dead_endpoint_is_a_backend_error() -> None:
    client = client_for("http://127.0.0.1:9/v1", max_retries=1)
    with pytest.raises(BackendError, match="did not answer after 2 attempts"):
        await client.create([UserMessage(content="q", source="u")])
    await client.close()


async def test_a_slow_answer_times_out() -> None:
    with StubOpenAIServer(lambda body, n: (200, completion_body("late"), 1.0)) as server:
        client = client_for(server.base_url, timeout_s=0.2)
        with pytest.raises(BackendError, match="timed out after 0.2 s"):
            await client.create([UserMessage(content="q", source="u")])
        await client.close()


def test_one_client_serves_successive_event_loops() -> None:
    """A notebook runs each cell's debate in its own loop; the client must follow."""
    with StubOpenAIServer(answering("ok")) as server:
        client = client_for(server.base_url)
        for _ in range(2):
            result = asyncio.run(client.create([UserMessage(content="q", source="u")]))
            assert result.content == "ok"
        asyncio.run(client.close())
    assert len(server.requests) == 2


def test_proxy_comes_from_the_environment_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("https_proxy", "http://proxy.example:3128")
    monkeypatch.setenv("no_proxy", "localhost,127.0.0.1")
    assert env_proxy("https://api.example.com/v1") == "http://proxy.example:3128"
    assert env_proxy("http://127.0.0.1:8000/v1") is None


async def test_stream_yields_the_answer_then_the_result() -> None:
    with StubOpenAIServer(answering("whole")) as server:
        client = client_for(server.base_url)
        chunks = [c async for c in client.create_stream([UserMessage(content="q", source="u")])]
        await client.close()
    assert chunks[0] == "whole" and chunks[-1].content == "whole"
