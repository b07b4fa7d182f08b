"""Run the single-agent check on one sample and turn its answer into a Verdict."""

from __future__ import annotations

import time

from m3d_agents.agents.checker import CheckerAgent
from m3d_agents.backends.factory import BackendPool
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.media.images import prepare_sample
from m3d_agents.labels import get_taxonomy
from m3d_agents.sample import InputLimits, Sample
from m3d_agents.verdict import Finding, TranscriptTurn, Verdict


async def check_sample(
    sample: Sample,
    pool: BackendPool,
    backend_name: str = "local",
    limits: InputLimits | None = None,
    retries: int = 2,
) -> Verdict:
    """Validate the sample, ask one agent, and return its verdict or a recorded abstention.

    Input errors and backend errors propagate: they are the caller's to report, not a verdict.
    """
    started = time.perf_counter()
    prepared = prepare_sample(sample, limits)
    taxonomy = get_taxonomy(sample.taxonomy)
    backend = pool.get(backend_name)
    ledger = UsageLedger()
    agent = CheckerAgent("checker", backend, ledger, prepared, taxonomy, retries=retries)
    await agent.run(task=f"Check post {sample.id}.")
    answer = agent.answer
    assert answer is not None
    common = {
        "sample_id": sample.id,
        "taxonomy": taxonomy.name,
        "config": "check",
        "backend": backend_name,
        "accounting": ledger.accounting(),
        "diagnostics": {"wall_time_s": round(time.perf_counter() - started, 3), "attempts": answer.attempts},
    }
    turn = TranscriptTurn(speaker="checker", role="checker", round=1, text=answer.text, parse_error=answer.error)
    if answer.value is None:
        return Verdict.abstain(
            reason=f"unreadable answer after {answer.attempts} attempts: {answer.error}",
            transcript=[turn],
            **common,
        )
    value, stated_confidence = answer.value
    label = str(getattr(value, "label"))
    turn.stance = label
    rationale = str(getattr(value, "rationale"))
    return Verdict(
        label=label,
        confidence=stated_confidence,
        rationale=rationale,
        findings=[Finding(modality="overall", label=label, summary=rationale)],
        transcript=[turn],
        **common,
    )
