"""The backend factory, structured output, caching per configuration, retries and accounting."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from autogen_core.models import UserMessage

from debates.session import run_sample
from m3d_agents.backends.config import BackendConfig, BackendSettings, load_backend_settings, resolve_backend_name
from m3d_agents.backends.factory import BackendPool, build_backend, model_info_for
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.errors import BackendError, InputError
from m3d_agents.sample import Sample
from tests.support.paths import EXAMPLE_IMAGE
from tests.support.openai_stub_server import StubOpenAIServer, completion_body
from tests.support.scripted import ScriptedClient, scripted_backend

GOOD = '{"rationale": "The storm clouds were composited onto a stock photo.", "label": "fake", "confidence": 0.8}'


def test_openai_backend_fails_fast_without_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(BackendError, match="OPENAI_API_KEY"):
        build_backend(BackendConfig(kind="openai"))


def test_model_info_per_kind() -> None:
    assert model_info_for(BackendConfig(kind="vllm"))["vision"] is True
    assert model_info_for(BackendConfig(kind="vllm"))["structured_output"] is True
    assert model_info_for(BackendConfig(kind="local"))["vision"] is False
    assert model_info_for(BackendConfig(kind="local"))["structured_output"] is False
    assert BackendConfig(kind="vllm").model_name == "Qwen/Qwen3-VL-8B-Instruct"
    assert BackendConfig(kind="openai").model_name == "gpt-4o"


def test_structured_output_request_per_backend() -> None:
    from debates.strategies.checker import answer_schema
    from m3d_agents.labels import get_taxonomy

    schema = answer_schema(get_taxonomy("binary"))
    vllm = build_backend(BackendConfig(kind="vllm", base_url="http://127.0.0.1:9/v1", cache=False))
    sent = vllm.structured_args(schema)["extra_create_args"]["response_format"]
    assert sent["type"] == "json_schema" and sent["json_schema"]["strict"] is True
    assert sent["json_schema"]["schema"]["additionalProperties"] is False
    local = build_backend(BackendConfig(kind="local", base_url="http://127.0.0.1:9/v1", cache=False))
    args = local.structured_args(schema)
    assert args["extra_create_args"]["response_format"]["type"] == "json_object"
    assert args["extra_create_args"]["response_format"]["schema"]["properties"]["label"]["enum"] == ["real", "fake"]


def test_cache_store_per_configuration() -> None:
    base = BackendConfig(kind="vllm")
    assert base.fingerprint() != base.with_overrides(temperature=0.9).fingerprint()
    assert base.fingerprint() != base.with_overrides(seed=7).fingerprint()
    assert base.fingerprint() != base.with_overrides(model="other").fingerprint()
    assert base.fingerprint() == base.with_overrides(concurrency=99).fingerprint()


def test_backend_resolution_order(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = tmp_path / "m3d.yaml"
    config.write_text("backend: gpu\nbackends:\n  gpu: {kind: vllm, base_url: 'http://10.0.0.5:8000/v1'}\n")
    settings = load_backend_settings(config)
    assert resolve_backend_name(None, BackendSettings()) == "local"
    assert resolve_backend_name(None, settings) == "gpu"
    monkeypatch.setenv("M3D_BACKEND", "openai")
    assert resolve_backend_name(None, settings) == "openai"
    assert resolve_backend_name("local", settings) == "local"
    assert settings.get("gpu").kind == "vllm"
    with pytest.raises(InputError, match="unknown backend 'nope'"):
        settings.get("nope")


def test_bad_config_file_names_the_file(tmp_path: Path) -> None:
    config = tmp_path / "m3d.yaml"
    config.write_text("backends:\n  gpu: {kind: tpu}\n")
    with pytest.raises(InputError, match="m3d.yaml"):
        load_backend_settings(config)


async def test_http_retries_on_429_and_5xx_then_answers() -> None:
    def respond(body: dict, n: int) -> tuple[int, dict, float]:
        if n == 1:
            return 429, {"error": {"message": "slow down"}}, 0.0
        if n == 2:
            return 503, {"error": {"message": "overloaded"}}, 0.0
        return 200, completion_body("hello"), 0.0

    with StubOpenAIServer(respond) as server:
        backend = build_backend(BackendConfig(kind="vllm", base_url=server.base_url, cache=False, transport_retries=3))
        ledger = UsageLedger()
        result = await backend.view(ledger, "a", "test").create([UserMessage(content="hi", source="user")])
        await backend.close()
    assert result.content == "hello"
    assert len(server.requests) == 3
    assert ledger.calls() == 1
    assert ledger.accounting().prompt_tokens == 12


async def test_response_cache_hits_are_counted() -> None:
    with StubOpenAIServer(lambda body, n: (200, completion_body(f"answer {n}"), 0.0)) as server:
        backend = build_backend(BackendConfig(kind="vllm", base_url=server.base_url, cache=True))
        ledger = UsageLedger()
        view = backend.view(ledger, "a", "test")
        first = await view.create([UserMessage(content="same", source="user")])
        second = await view.create([UserMessage(content="same", source="user")])
        third = await view.create([UserMessage(content="same", source="user")], extra_create_args={"seed": 2})
        await backend.close()
    assert first.content == second.content == "answer 1"
    assert third.content == "answer 2"
    assert len(server.requests) == 2
    assert ledger.accounting().cache_hits == 1


async def test_call_timeout_is_a_backend_error() -> None:
    with StubOpenAIServer(lambda body, n: (200, completion_body("late"), 1.5)) as server:
        config = BackendConfig(kind="vllm", base_url=server.base_url, cache=False, timeout_s=0.3, transport_retries=0)
        backend = build_backend(config)
        with pytest.raises(BackendError, match="timed out"):
            await backend.view(UsageLedger(), "a", "test").create([UserMessage(content="hi", source="user")])
        await backend.close()


async def test_concurrency_limit_per_backend() -> None:
    client = ScriptedClient(lambda m, k: "ok", delay_s=0.05)
    backend = scripted_backend(client, concurrency=2)
    ledger = UsageLedger()
    await asyncio.gather(*(backend.view(ledger, f"a{i}", "r").create([UserMessage(content=str(i), source="u")])
                           for i in range(6)))
    overlaps = max(sum(1 for c in client.calls if c.started <= t.started < c.finished) for t in client.calls)
    assert overlaps <= 2
    assert ledger.calls() == 6


async def test_check_builds_a_verdict_with_accounting() -> None:
    client = ScriptedClient([GOOD])
    pool = BackendPool()
    pool.add(scripted_backend(client, name="scripted"))
    verdict = await run_sample("check", Sample(text="Storm over the Statue of Liberty", images=[EXAMPLE_IMAGE]), pool, backend="scripted")
    assert verdict.label == "fake" and verdict.is_misinformation is True
    assert verdict.confidence == 0.8
    assert verdict.accounting.model_calls == 1
    assert verdict.accounting.by_role["checker"].calls == 1
    assert verdict.transcript[0].stance == "fake"
    prompt = client.calls[0].prompt
    assert "Storm over the Statue of Liberty" in prompt
    assert "cannot see it" in prompt


async def test_check_retries_unreadable_answers_then_abstains() -> None:
    client = ScriptedClient(["I think it is fake", "{'label': 'maybe'}", "still no json"])
    pool = BackendPool()
    pool.add(scripted_backend(client, name="scripted"))
    verdict = await run_sample("check", Sample(text="a claim"), pool, backend="scripted")
    assert verdict.abstained
    assert "unreadable answer after 3 attempts" in (verdict.abstain_reason or "")
    assert verdict.accounting.model_calls == 3
    assert verdict.accounting.parse_retries == 2
    assert "could not be read" in client.calls[1].prompt


async def test_check_recovers_on_retry() -> None:
    client = ScriptedClient(["not json", GOOD])
    pool = BackendPool()
    pool.add(scripted_backend(client, name="scripted"))
    verdict = await run_sample("check", Sample(text="a claim"), pool, backend="scripted")
    assert verdict.label == "fake"
    assert verdict.diagnostics.attempts == 2


async def test_vision_backend_receives_the_image() -> None:
    from autogen_core import Image as AgentImage

    client = ScriptedClient([GOOD], vision=True)
    pool = BackendPool()
    pool.add(scripted_backend(client, name="scripted"))
    await run_sample("check", Sample(text="a claim", images=[EXAMPLE_IMAGE]), pool, backend="scripted")
    content = client.calls[0].messages[-1].content
    assert isinstance(content, list) and isinstance(content[-1], AgentImage)


async def test_check_keeps_a_valid_label_whose_confidence_is_out_of_range() -> None:
    client = ScriptedClient(['{"rationale": "Composited clouds.", "label": "fake", "confidence": 10}'])
    pool = BackendPool()
    pool.add(scripted_backend(client, name="scripted"))
    verdict = await run_sample("check", Sample(text="a claim"), pool, backend="scripted")
    assert verdict.label == "fake" and verdict.confidence is None
    assert verdict.accounting.model_calls == 1 and verdict.accounting.parse_retries == 0
