"""Each backend's key goes to that backend alone: what the server received in ``Authorization``."""

from __future__ import annotations

import pytest
from autogen_core.models import UserMessage

from m3d_agents.backends.config import BackendConfig
from m3d_agents.backends.factory import build_backend
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.backends.transports.retry import NO_KEY
from m3d_agents.errors import BackendError
from tests.support.openai_stub_server import StubOpenAIServer, completion_body

# The SDK transport silences AutoGen's model-name warning for the product; pytest shows every warning.
pytestmark = pytest.mark.filterwarnings("ignore:Resolved model mismatch")

OPENAI_KEY = "sk-test-OPENAI-SECRET"
VLLM_KEY = "vllm-test-SECRET"


@pytest.fixture(autouse=True)
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.delenv("M3D_VLLM_API_KEY", raising=False)
    monkeypatch.delenv("VLLM_API_KEY", raising=False)
    monkeypatch.delenv("M3D_VLLM_BASE_URL", raising=False)
    monkeypatch.delenv("M3D_LOCAL_BASE_URL", raising=False)


async def received(config: BackendConfig) -> str | None:
    """The Authorization header a stub server got from one call through ``config``'s backend."""
    with StubOpenAIServer(lambda body, n: (200, completion_body("ok"), 0.0)) as server:
        backend = build_backend(config.with_overrides(base_url=server.base_url, cache=False))
        await backend.view(UsageLedger(), "a", "test").create([UserMessage(content="hi", source="u")])
        await backend.close()
    return server.authorization(0)


@pytest.mark.parametrize("transport", ["http", "sdk"])
async def test_a_vllm_backend_never_sends_the_openai_key(transport: str) -> None:
    assert await received(BackendConfig(kind="vllm", transport=transport)) == f"Bearer {NO_KEY}"


@pytest.mark.parametrize("transport", ["http", "sdk"])
async def test_a_vllm_backend_sends_its_own_key(transport: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("M3D_VLLM_API_KEY", VLLM_KEY)
    assert await received(BackendConfig(kind="vllm", transport=transport)) == f"Bearer {VLLM_KEY}"


async def test_an_explicit_key_variable_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("M3D_VLLM_API_KEY", VLLM_KEY)
    monkeypatch.setenv("GPU_BOX_KEY", "gpu-box-SECRET")
    assert await received(BackendConfig(kind="vllm", api_key_env="GPU_BOX_KEY")) == "Bearer gpu-box-SECRET"
    assert await received(BackendConfig(kind="local", api_key_env="GPU_BOX_KEY")) == "Bearer gpu-box-SECRET"


async def test_a_local_backend_sends_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("M3D_VLLM_API_KEY", VLLM_KEY)
    assert await received(BackendConfig(kind="local")) == f"Bearer {NO_KEY}"


@pytest.mark.parametrize("transport", ["http", "sdk"])
async def test_an_openai_backend_sends_the_openai_key(transport: str) -> None:
    assert await received(BackendConfig(kind="openai", transport=transport)) == f"Bearer {OPENAI_KEY}"


def test_key_variables_per_kind() -> None:
    assert BackendConfig(kind="openai").key_env == "OPENAI_API_KEY"
    assert BackendConfig(kind="vllm").key_env == "M3D_VLLM_API_KEY"
    assert BackendConfig(kind="local").key_env is None
    assert BackendConfig(kind="vllm").api_key() is None and BackendConfig(kind="local").api_key() is None
    assert BackendConfig(kind="openai").api_key() == OPENAI_KEY


def test_an_openai_backend_names_its_missing_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(BackendError, match="MY_OPENAI_KEY"):
        build_backend(BackendConfig(kind="openai", api_key_env="MY_OPENAI_KEY"))
