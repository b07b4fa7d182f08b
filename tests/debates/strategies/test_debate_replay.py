"""A debate with retrieval, fully offline: evidence and query answers replayed from a recorded MR2 trace."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from autogen_core.models import LLMMessage

from debates.config_loader import load_config
from debates.session import run_sample
from retrieval.answerer import GatheredEvidenceAnswerer
from retrieval.pipeline import mr2_replay_pipeline
from retrieval.providers.mr2_trace import MR2Trace
from tests.support.paths import shared_data
from tests.support.scripted import text_of
from tests.support.debate import seat_pool


async def test_disambiguation_debate_runs_offline_on_a_recorded_mr2_trace() -> None:
    root = shared_data("mr2-sample")
    trace = MR2Trace(root)
    sample = trace.sample("4806303862493315")
    pipeline = mr2_replay_pipeline(root)

    def respond_as(first_answer: str):  # type: ignore[no-untyped-def]
        def respond(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
            first_round = "Round 1." in text_of(messages)
            query = "\nQUERY: 新冠 疫苗" if first_round else ""
            answer = first_answer if first_round else "false"
            return f"The recorded pages bear on this.{query}\nFINAL ANSWER: {answer}\nCONFIDENCE: 0.6"

        return respond

    config = load_config("disambiguation-three").model_copy(update={"max_rounds": 2})
    scripts = {"agent_a": respond_as("false"), "agent_b": respond_as("false"), "agent_c": respond_as("unproven")}
    config, pool, clients = seat_pool(config, scripts)
    verdict = await run_sample(
        config, sample, pool, evidence_source=pipeline, query_answerer=GatheredEvidenceAnswerer(pipeline)
    )
    kept = [e for e in await pipeline.gather(sample) if e.kept]
    assert kept, "the trace yields evidence for this claim"
    first_prompt = clients["agent_a"].calls[0].prompt
    assert "<<<QUOTED " in first_prompt and kept[0].id in first_prompt
    assert verdict.taxonomy == "factcheck" and verdict.label == "false"
    assert set(e.id for e in kept) <= set(verdict.evidence_ids)
    assert verdict.diagnostics.queries_answered == 1
    assert any(t.speaker == "retrieval_desk" for t in verdict.transcript)
