"""vLLM's answer once its engine has died is recognised by both transports: one clear line, no retries.

vLLM answers every request with this 500 until it is restarted (its ``EngineDeadError``, which it calls
unrecoverable), so retrying only delays the message. The real crash is met in
``tests/vllm/test_engine_crash.py``."""

from __future__ import annotations

import pytest
from autogen_core.models import ModelInfo, UserMessage

from m3d_agents.backends.transports.lean_http import OpenAICompatibleClient
from m3d_agents.backends.transports.sdk import SdkClient
from m3d_agents.errors import BackendError, EngineDead
from tests.support.openai_stub_server import StubOpenAIServer

pytestmark = pytest.mark.filterwarnings("ignore:Resolved model mismatch")

INFO = ModelInfo(vision=False, function_calling=True, json_output=True, family="unknown", structured_output=True,
                 multiple_system_messages=False)
DEAD = {"error": {"message": "EngineCore encountered an issue. See stack trace (above) for the root cause.",
                  "type": "InternalServerError", "param": None, "code": 500}}
OTHER = {"error": {"message": "something else broke", "type": "InternalServerError", "param": None, "code": 500}}


@pytest.mark.parametrize("transport", [OpenAICompatibleClient, SdkClient])
async def test_a_dead_engine_is_reported_at_once(transport: type) -> None:
    with StubOpenAIServer(lambda body, n: (500, DEAD, 0.0)) as server:
        client = transport(base_url=server.base_url, model="m", model_info=INFO, max_retries=3)
        with pytest.raises(EngineDead) as caught:
            await client.create([UserMessage(content="hi", source="u")])
        await client.close()
    assert len(server.requests) == 1
    message = str(caught.value)
    assert "\n" not in message and server.base_url in message
    assert "--no-enable-chunked-prefill" in message and "CPU Generator does not use offset" in message


@pytest.mark.parametrize("transport", [OpenAICompatibleClient, SdkClient])
async def test_another_500_is_still_retried(transport: type, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("m3d_agents.backends.transports.retry.backoff_s", lambda attempt, retry_after=None: 0.0)
    with StubOpenAIServer(lambda body, n: (500, OTHER, 0.0)) as server:
        client = transport(base_url=server.base_url, model="m", model_info=INFO, max_retries=2)
        with pytest.raises(BackendError, match="did not answer after 3 attempts") as caught:
            await client.create([UserMessage(content="hi", source="u")])
        await client.close()
    assert not isinstance(caught.value, EngineDead) and len(server.requests) == 3
