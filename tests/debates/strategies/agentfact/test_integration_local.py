"""AgentFact on the embedded 270M model (llama.cpp, JSON-schema grammars), evidence-bounded, on one RW-Post
fixture row with three gold evidence items. It checks the mechanics only: the run ends, within the
call budget, with a fact-check label or an abstention that says why, and every cited id is one of
the gold ids (the grammar's id enum allows no other)."""

from __future__ import annotations

import time

import pytest

from debates.config_loader import load_config, with_overrides
from debates.session import run_sample
from m3d_agents.backends.factory import BackendPool
from m3d_agents.datasets import load_dataset
from tests.support.paths import REPO

pytestmark = pytest.mark.integration

MAIN = REPO / "tests" / "fixtures" / "datasets" / "AgentFact" / "RW_Post_dataset" / "rwpost_dev_main.jsonl"


async def test_agentfact_bounded_runs_on_the_embedded_model() -> None:
    loaded = load_dataset(f"rwpost:{MAIN}")
    post = loaded.samples[0]
    gold = loaded.gold_evidence[post.id]
    assert [e.id for e in gold] == ["E1", "E2", "E3"]
    # Small answers keep the smoke test cheap on a shared CPU; the schema caps every field anyway.
    config = with_overrides(
        load_config("agentfact-bounded"), max_tokens=256, plan_steps=1, plan_items=1, key_points=1, text_chars=120,
        evidence_chars=300,
    )
    pool = BackendPool()
    started = time.perf_counter()
    try:
        verdict = await run_sample(config, post, pool, backend="local", gold_evidence=gold)
    finally:
        await pool.close()
    elapsed = time.perf_counter() - started
    turns = "\n".join(f"{t.speaker}: {t.parse_error or 'read'} | {t.text[:300]}" for t in verdict.transcript)
    # The 240 s budget is a figure to read, not an assertion: a shared CPU can take several times longer.
    print(f"agentfact smoke test on the embedded model: {elapsed:.1f} s wall, {verdict.accounting.model_calls} calls")
    assert 3 <= verdict.accounting.model_calls <= 9, turns
    assert verdict.backend == "local"
    if verdict.abstained:
        assert verdict.abstain_reason
    else:
        assert verdict.label in {"true", "false", "unproven"}
        assert verdict.explanation is not None
        assert set(verdict.explanation.display_ids[i] for i in verdict.explanation.cited_ids()) <= {"E1", "E2", "E3"}
        assert set(verdict.explanation.cited_ids()) <= {e.id for e in verdict.evidence}
    assert [t.speaker for t in verdict.transcript] == ["strategist", "reasoner", "explainer"]
