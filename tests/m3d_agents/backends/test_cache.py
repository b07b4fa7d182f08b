"""The response cache: one store per fingerprint, and a fingerprint per server, so no two servers share answers."""

from __future__ import annotations

from pathlib import Path

import pytest
from autogen_core.models import CreateResult, UserMessage

from m3d_agents.backends.config import BackendConfig
from m3d_agents.backends.factory import build_backend
from m3d_agents.backends.metering import UsageLedger
from tests.support.openai_stub_server import StubOpenAIServer, completion_body

# The SDK transport silences AutoGen's model-name warning for the product; pytest shows every warning.
pytestmark = pytest.mark.filterwarnings("ignore:Resolved model mismatch")


@pytest.fixture(autouse=True)
def no_endpoint_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("M3D_VLLM_BASE_URL", raising=False)
    monkeypatch.delenv("M3D_LOCAL_BASE_URL", raising=False)


def named(name: str) -> StubOpenAIServer:
    """A server whose every answer says which server gave it."""
    return StubOpenAIServer(lambda body, n: (200, completion_body(f"{name} {n}"), 0.0))


async def ask(config: BackendConfig) -> CreateResult:
    backend = build_backend(config)
    ledger = UsageLedger()
    try:
        return await backend.view(ledger, "a", "test").create([UserMessage(content="same question", source="u")])
    finally:
        await backend.close()


async def test_two_base_urls_never_share_answers(tmp_path: Path) -> None:
    with named("first") as first, named("second") as second:
        one = BackendConfig(kind="vllm", base_url=first.base_url, cache_dir=tmp_path)
        two = one.with_overrides(base_url=second.base_url)
        assert (await ask(one)).content == "first 1"
        assert (await ask(two)).content == "second 1"
        again = await ask(one)
    assert again.content == "first 1" and again.cached
    assert (len(first.requests), len(second.requests)) == (1, 1)


@pytest.mark.parametrize("kind, variable", [("vllm", "M3D_VLLM_BASE_URL"), ("local", "M3D_LOCAL_BASE_URL")])
async def test_servers_chosen_by_environment_never_share_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, variable: str
) -> None:
    config = BackendConfig(kind=kind, cache_dir=tmp_path)  # type: ignore[arg-type]
    with named("first") as first, named("second") as second:
        monkeypatch.setenv(variable, first.base_url)
        assert (await ask(config)).content == "first 1"
        monkeypatch.setenv(variable, second.base_url)
        assert (await ask(config)).content == "second 1"
    assert (len(first.requests), len(second.requests)) == (1, 1)


async def test_a_dead_server_gets_no_answers_replayed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The audit's case: pointing ``local`` at nothing must fail, not print the first server's verdict."""
    config = BackendConfig(kind="local", cache_dir=tmp_path, transport_retries=0, restart_wait_s=0)
    with named("first") as first:
        monkeypatch.setenv("M3D_LOCAL_BASE_URL", first.base_url)
        await ask(config)
    monkeypatch.setenv("M3D_LOCAL_BASE_URL", "http://127.0.0.1:9/v1")
    with pytest.raises(Exception, match="did not answer"):
        await ask(config)


async def test_both_transports_share_one_store(tmp_path: Path) -> None:
    """They send the same bodies, so an answer cached by one is the answer the other would get."""
    with named("server") as server:
        config = BackendConfig(kind="vllm", base_url=server.base_url, cache_dir=tmp_path)
        await ask(config)
        replayed = await ask(config.with_overrides(transport="sdk"))
    assert replayed.cached and replayed.content == "server 1" and len(server.requests) == 1


def test_what_changes_the_fingerprint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = BackendConfig(kind="vllm")
    changed = [
        base.with_overrides(base_url="http://127.0.0.1:8001/v1"),
        base.with_overrides(temperature=0.9),
        base.with_overrides(seed=7),
        base.with_overrides(max_tokens=100),
        base.with_overrides(model="other"),
        base.with_overrides(vision=False),
        base.with_overrides(kind="openai"),
    ]
    for other in changed:
        assert other.fingerprint() != base.fingerprint()
    same = [base.with_overrides(transport="sdk"), base.with_overrides(timeout_s=5, transport_retries=0, concurrency=2),
            base.with_overrides(api_key_env="SOME_KEY"), base.with_overrides(base_url="http://127.0.0.1:8000/v1/")]
    for other in same:
        assert other.fingerprint() == base.fingerprint()
    monkeypatch.setenv("M3D_VLLM_BASE_URL", "http://127.0.0.1:8001/v1")
    assert base.fingerprint() == changed[0].fingerprint()


def test_the_embedded_model_is_part_of_the_fingerprint(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = tmp_path / "a.gguf", tmp_path / "b.gguf"
    first.write_bytes(b"model a")
    second.write_bytes(b"model b")
    packaged = BackendConfig(kind="local")
    from_a = BackendConfig.model_validate({"kind": "local", "local": {"model_path": first}})
    from_b = BackendConfig.model_validate({"kind": "local", "local": {"model_path": second}})
    bigger_context = BackendConfig.model_validate({"kind": "local", "local": {"n_ctx": 4096}})
    prints = {c.fingerprint() for c in (packaged, from_a, from_b, bigger_context)}
    assert len(prints) == 4
    before = from_a.fingerprint()
    first.write_bytes(b"model a, retrained")
    assert from_a.fingerprint() != before
    monkeypatch.setenv("M3D_LOCAL_BASE_URL", "http://127.0.0.1:8080/v1")
    assert packaged.fingerprint() not in prints
