"""Every answer is bounded, in both transports: an endless or huge body is refused once it passes
``max_answer_bytes`` (never read to the end), JSON nested beyond reason and impossible usage counts
are refused answers, and none of them is retried or surfaces as "unexpected"."""

from __future__ import annotations

from typing import Any, Iterator

import pytest
from autogen_core.models import ModelInfo, UserMessage

from m3d_agents.backends.config import BackendConfig
from m3d_agents.backends.transports.lean_http import OpenAICompatibleClient
from m3d_agents.backends.transports.sdk import SdkClient
from m3d_agents.errors import AnswerRefused, BackendError
from tests.support.flood_server import FloodServer
from tests.support.openai_stub_server import completion_body

INFO = ModelInfo(vision=False, function_calling=True, json_output=True, family="unknown", structured_output=True,
                 multiple_system_messages=False)
TRANSPORTS = {"http": OpenAICompatibleClient, "sdk": SdkClient}
LIMIT = 1024 * 1024

pytestmark = pytest.mark.filterwarnings("ignore:Resolved model mismatch")


@pytest.fixture(params=sorted(TRANSPORTS))
def transport(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def server() -> Iterator[FloodServer]:
    with FloodServer() as flood:
        yield flood


async def ask(transport: str, server: FloodServer, **settings: Any) -> Any:
    client = TRANSPORTS[transport](base_url=server.base_url, model="m", model_info=INFO, max_retries=2, timeout_s=60.0,
                                   max_answer_bytes=LIMIT, **settings)
    try:
        return await client.create([UserMessage(content="q", source="u")])
    finally:
        await client.close()


async def test_an_endless_body_is_refused_past_the_limit(transport: str, server: FloodServer) -> None:
    server.mode = "endless"
    with pytest.raises(AnswerRefused, match=f"over the limit of {LIMIT} bytes"):
        await ask(transport, server)
    assert server.sent < 64 * LIMIT, f"the client read {server.sent} bytes of an endless answer"


async def test_a_declared_length_over_the_limit_is_refused_before_reading(transport: str, server: FloodServer) -> None:
    server.mode = "declared"
    with pytest.raises(AnswerRefused, match="of 10737418240 bytes over the limit"):
        await ask(transport, server)


async def test_deeply_nested_json_is_a_refused_answer(transport: str, server: FloodServer) -> None:
    server.mode = "deep"
    with pytest.raises(AnswerRefused, match="JSON nested"):
        await ask(transport, server)


@pytest.mark.parametrize("usage, words", [
    ({"prompt_tokens": -5, "completion_tokens": 3}, "impossible number"),
    ({"prompt_tokens": 10**15, "completion_tokens": 3}, "impossible number"),
    ({"prompt_tokens": 2.5, "completion_tokens": 3}, "not a whole number"),
    ({"prompt_tokens": "many", "completion_tokens": 3}, "not a number"),
    ({"prompt_tokens": True, "completion_tokens": 3}, "not a number"),
])
async def test_impossible_usage_counts_refuse_the_answer(transport: str, server: FloodServer, usage: dict[str, Any],
                                                         words: str) -> None:
    body = completion_body("fine")
    body["usage"] = usage
    server.payload = body
    with pytest.raises(BackendError, match=words):
        await ask(transport, server)


async def test_a_message_that_is_not_text_is_refused(transport: str, server: FloodServer) -> None:
    body = completion_body("fine")
    body["choices"][0]["message"]["content"] = {"not": "text"}
    server.payload = body
    with pytest.raises(BackendError, match="not text"):
        await ask(transport, server)


async def test_sound_usage_and_text_parts_still_read(transport: str, server: FloodServer) -> None:
    body = completion_body("fine", prompt_tokens=12, completion_tokens=7)
    server.payload = body
    result = await ask(transport, server)
    assert result.content == "fine" and (result.usage.prompt_tokens, result.usage.completion_tokens) == (12, 7)


def test_the_limit_is_a_backend_setting_with_a_sane_default() -> None:
    assert BackendConfig().max_answer_bytes == 8 * 1024 * 1024
    assert BackendConfig(max_answer_bytes=1000).max_answer_bytes == 1000
    with pytest.raises(ValueError):
        BackendConfig(max_answer_bytes=0)
