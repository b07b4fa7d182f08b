"""What only the lean client has: it is the default transport, and it looks its proxy up once.

Everything both transports must do alike (request bodies, retries, errors, usage, cancellation)
is in ``test_conformance.py``, run against each.
"""

from __future__ import annotations

import pytest

from m3d_agents.backends.config import BackendConfig
from m3d_agents.backends.factory import build_backend
from m3d_agents.backends.transports.lean_http import OpenAICompatibleClient, env_proxy
from m3d_agents.backends.transports.sdk import SdkClient


async def test_the_default_transport_is_the_lean_client() -> None:
    backend = build_backend(BackendConfig(kind="vllm", base_url="http://127.0.0.1:9/v1", cache=False))
    assert isinstance(backend.client, OpenAICompatibleClient)
    sdk = build_backend(BackendConfig(kind="vllm", base_url="http://127.0.0.1:9/v1", cache=False, transport="sdk"))
    assert isinstance(sdk.client, SdkClient)
    assert type(sdk.client.autogen_client()).__name__ == "OpenAIChatCompletionClient"
    await sdk.close()


def test_proxy_comes_from_the_environment_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("https_proxy", "http://proxy.example:3128")
    monkeypatch.setenv("no_proxy", "localhost,127.0.0.1")
    assert env_proxy("https://api.example.com/v1") == "http://proxy.example:3128"
    assert env_proxy("http://127.0.0.1:8000/v1") is None
