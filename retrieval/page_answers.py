"""Answering one search query with pages: the pages a web search finds for it, read, rated and filtered,
and a summary of each kept page focused on the query (AgentFact's per-query retrieval, and every
searching agent's web search under ``retrieval.web_answers: pages``).

Pages that do not help answer the query are dropped, and at most ``per_query_items`` are kept: pages
are summarised in rank order until that many helpful ones are, so a query costs at most a few
summaries beyond the ones it keeps. Every provider call and summary goes through the evidence store,
so a query answered once is answered again offline.
"""

from __future__ import annotations

import asyncio

from m3d_agents.backends.metering import UsageLedger
from m3d_agents.sample import Sample
from retrieval.evidence_steps import EvidenceSteps, GatherResult, HitOrigin, distinct_hits
from retrieval.providers.base import SearchHit


async def answer_query(steps: EvidenceSteps, query: str, sample: Sample, ledger: UsageLedger | None = None) -> GatherResult:
    """Every item one query turned up, kept or dropped with its reason, plus the leakage counts."""
    ledger = ledger if ledger is not None else UsageLedger()
    result = GatherResult(sample_id=sample.id)
    if not query.strip():
        return result
    config = steps.config
    hits: list[tuple[SearchHit, HitOrigin]] = [
        (hit, "web_page") for hit in await steps.web_hits(result, sample, query, config.query_pages)
    ]
    pages = await asyncio.gather(*(steps.read_page(hit, origin, result) for hit, origin in distinct_hits(hits)))
    filtered = await steps.screen([page for page in pages if page is not None], sample, ledger, result)
    limit, kept = config.per_query_items, 0
    for evidence in filtered:
        if evidence.kept and kept >= limit:
            evidence = evidence.model_copy(
                update={"kept": False, "reason": f"{evidence.reason}; not read: {limit} items were already kept for the query"}
            )
        elif evidence.kept:
            evidence = await steps.finish(evidence, sample, "", ledger, focus=query)
            kept += int(evidence.kept)
        result.evidence.append(evidence)
    if steps.log is not None:
        steps.log.evidence(sample.id, result.evidence)
    return result
