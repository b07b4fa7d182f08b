"""AgentFact offline on a recorded MR2 claim: the retriever's queries are answered by BM25 over the claim's
recorded pages, the visual analyst reads the recorded reverse image search, the evidence store replays
every provider answer, and nothing reaches the network."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any, Mapping, Sequence

import pytest
from autogen_core.models import LLMMessage

from debates.strategies.agentfact.config import AgentFactConfig
from debates.config_loader import load_config
from debates.session import run_sample
from m3d_agents.backends.factory import BackendPool
from retrieval.answerer import GatheredEvidenceAnswerer
from retrieval.pipeline import mr2_replay_pipeline
from retrieval.providers.mr2_trace import MR2Trace
from retrieval.reliability import DomainRatings
from retrieval.store import EvidenceStore
from tests.support.paths import shared_data
from tests.support.schema_stub import schema_responder
from tests.support.scripted import ScriptedClient, scripted_backend, text_of

CLAIM = "4806303862493315"


def respond(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
    """The strategist and the query writer search the post's own words; every other agent gives a valid
    answer to its schema (enum values chosen by a digest of the prompt)."""
    prompt = text_of(messages)
    post = prompt.split('"""', 2)[1].strip() if '"""' in prompt else ""
    if "Task: agentfact/queries" in prompt:
        return json.dumps({"queries": [post[:60]]})
    if "Task: agentfact/strategy" in prompt:
        return json.dumps({"reasoning_steps": [{"step": "Trace the photo", "method": "origin_tracing", "details": "pages"}],
                           "validation_list": [{"sentence": post[:120], "explanation": "the claim"}], "search_list": []})
    return schema_responder(messages, kwargs)


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuses every connection over a network; a Unix socket (the parser pool's fork server) is the
    machine's own process talking to itself, not the network, and goes through."""
    connect = socket.socket.connect

    def refuse_network(self: socket.socket, address: object) -> None:
        if self.family == socket.AF_UNIX:
            return connect(self, address)  # type: ignore[arg-type]
        raise AssertionError("a network connection was attempted")

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a network connection was attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse_network)
    monkeypatch.setattr(socket, "create_connection", refuse)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The claim's retrieval recorded once into a store, for both configurations to replay."""
    import asyncio

    root = shared_data("mr2-sample")
    path = tmp_path_factory.mktemp("store") / "evidence.sqlite"
    store = EvidenceStore(path, "record")
    asyncio.run(mr2_replay_pipeline(root, store=store).gather(MR2Trace(root).sample(CLAIM)))
    store.close()
    return path


@pytest.mark.parametrize("name", ["agentfact", "agentfact-no-sp"])
async def test_agentfact_runs_offline_on_a_recorded_mr2_claim(name: str, recorded: Path, offline: None) -> None:
    root = shared_data("mr2-sample")
    store = EvidenceStore(recorded, "replay")
    pipeline = mr2_replay_pipeline(root, store=store)
    assert pipeline.fetcher is None
    config: AgentFactConfig = load_config(name).model_copy(deep=True)  # type: ignore[assignment]
    pool, clients = BackendPool(), {}
    for seat in config.seats:
        seat.backend = f"b_{seat.role}"
        clients[seat.role] = ScriptedClient(respond, structured_output=True)
        pool.add(scripted_backend(clients[seat.role], name=seat.backend))
    answerer = GatheredEvidenceAnswerer(pipeline)
    verdict = await run_sample(config, MR2Trace(root).sample(CLAIM), pool, evidence_source=pipeline, searchers={"web": answerer})

    assert verdict.taxonomy == "factcheck" and verdict.explanation is not None and not verdict.abstained
    assert set(verdict.explanation.cited_ids()) <= {e.id for e in verdict.evidence}
    shown = verdict.explanation.display_ids
    images = sorted(d for d in shown.values() if d.startswith("I"))
    assert images[:2] == ["I1", "I2"], "the reverse-image pages become findings I1, I2, ..."
    assert any(d.startswith("E") for d in shown.values()), "the recorded pages answer the retriever's queries"
    factcheck = DomainRatings.shipped().domains("factcheck")
    prompts = [call.prompt for client in clients.values() for call in client.calls]
    assert not any(domain in prompt for domain in factcheck for prompt in prompts)
    assert verdict.diagnostics.stop_reason in {"plans exhausted", "step limit", "confident"}
    if name == "agentfact-no-sp":
        assert "strategist" not in [t.speaker for t in verdict.transcript]
        assert verdict.accounting.by_role["query_writer"].calls >= 1, "the claim went through the query writer"
    store.close()
