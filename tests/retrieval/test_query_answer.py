"""The pipeline as a query answerer: search, pages, reliability, leakage, a summary focused on the query,
irrelevant pages dropped, a per-query limit, and all of it replayed from the store with no provider call."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any, Mapping, Sequence

from autogen_core.models import LLMMessage

from m3d_agents.backends.metering import UsageLedger
from m3d_agents.sample import Sample, SampleMetadata
from retrieval.config import RetrievalConfig
from retrieval.interfaces import QueryAnswerer
from retrieval.pipeline import EvidencePipeline
from retrieval.providers.base import SearchHit
from retrieval.providers.local_corpus import LocalCorpus
from retrieval.store import EvidenceStore
from retrieval.summarise import Summariser
from tests.support.paths import REPO
from tests.support.scripted import ScriptedClient, scripted_backend, text_of

CORPUS = REPO / "tests" / "fixtures" / "agentfact" / "corpus.jsonl"
SAMPLE = Sample(
    id="harbour", text="A photograph shows the Harbour Street footbridge collapsing on its opening day.",
    taxonomy="factcheck", metadata=SampleMetadata(claim_date=date(2023, 5, 1)),
)


class CountingSearch:
    """A provider that counts its calls, around the BM25 corpus."""

    def __init__(self, corpus: LocalCorpus) -> None:
        self.corpus = corpus
        self.name = corpus.name
        self.calls = 0

    async def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        self.calls += 1
        return await self.corpus.search(query, limit)


def summarise_marking_the_bakery_irrelevant(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
    prompt = text_of(messages)
    relevant = "bakery" not in prompt
    return json.dumps({"summary": "- points that answer the search" if relevant else "nothing relevant", "relevant": relevant})


def pipeline(summariser: Summariser | None, store: EvidenceStore | None = None) -> tuple[EvidencePipeline, CountingSearch]:
    search = CountingSearch(LocalCorpus.from_jsonl(CORPUS))
    config = RetrievalConfig(per_query_items=5, caption_search=False)
    return EvidencePipeline(web=[search], summariser=summariser, store=store, config=config), search


async def test_a_query_keeps_the_helpful_pages_and_counts_each_leakage_rule() -> None:
    client = ScriptedClient(summarise_marking_the_bakery_irrelevant)
    answerer, _ = pipeline(Summariser(scripted_backend(client)))
    assert isinstance(answerer, QueryAnswerer)
    result = await answerer.answer_result("Harbourton", SAMPLE, UsageLedger())
    kept = {e.url for e in result.evidence if e.kept}
    assert kept == {
        "https://harbourton.gov.example/news/footbridge-opens",
        "https://harbourton-herald.example/2023/04/02/footbridge-first-weeks",
        "https://www.theonion.com/harbourton-bridge-collapses-out-of-embarrassment",
        "https://harbourtongazette.example/2019/mill-lane-demolition",
    }
    assert result.leakage.dropped == {"factcheck_substring": 0, "factcheck_domain": 1, "factcheck_path": 1, "claim_review": 0,
                                      "after_claim_date": 1, "undated": 0}
    satire = next(e for e in result.evidence if e.domain == "theonion.com")
    assert satire.reliability == "satire" and satire.summary == "- points that answer the search"
    bakery = next(e for e in result.evidence if e.domain == "harbourton-eats.example")
    assert not bakery.kept and "helps answer the query 'Harbourton'" in bakery.reason
    assert all('searched the web for: "Harbourton"' in call.prompt for call in client.calls)
    assert len(client.calls) == 5, "the kept pages and the irrelevant one are summarised; leaked ones never are"


async def test_without_a_summariser_pages_are_kept_on_their_text_up_to_the_per_query_limit() -> None:
    answerer, _ = pipeline(None)
    evidence = await answerer.answer("Harbourton", SAMPLE)
    bakery = next(e for e in evidence if e.domain == "harbourton-eats.example")
    assert bakery.kept and bakery.summary is None and "sourdough" in bakery.text
    limited = EvidencePipeline(web=[CountingSearch(LocalCorpus.from_jsonl(CORPUS))], config=RetrievalConfig(per_query_items=2))
    evidence = await limited.answer("Harbourton", SAMPLE)
    assert sum(e.kept for e in evidence) == 2
    assert any("2 items were already kept for the query" in e.reason for e in evidence)
    assert await limited.answer("   ", SAMPLE) == []


async def test_a_recorded_query_replays_the_same_evidence_without_calling_anything(tmp_path: Path) -> None:
    store_path = tmp_path / "evidence.sqlite"
    recorder = EvidenceStore(store_path, "record")
    client = ScriptedClient(summarise_marking_the_bakery_irrelevant)
    live, live_search = pipeline(Summariser(scripted_backend(client), store=recorder), recorder)
    recorded = await live.answer("Harbourton", SAMPLE)
    recorder.close()
    assert live_search.calls == 1 and len(client.calls) == 5

    replayer = EvidenceStore(store_path, "replay")
    silent = ScriptedClient([])
    offline, offline_search = pipeline(Summariser(scripted_backend(silent), store=replayer), replayer)
    ledger = UsageLedger()
    replayed = await offline.answer("Harbourton", SAMPLE, ledger)
    assert replayed == recorded
    assert offline_search.calls == 0 and silent.calls == [] and ledger.calls() == 0


async def test_a_news_site_is_kept_while_its_fact_check_section_is_dropped() -> None:
    class Reuters:
        name = "fixed"

        async def search(self, query: str, limit: int = 10) -> list[SearchHit]:
            return [
                SearchHit(url="https://www.reuters.com/world/europe/bridge-opens-2023-03-14/", snippet="The bridge opened.", provider=self.name),
                SearchHit(url="https://www.reuters.com/fact-check/bridge-photo-2023-04-21/", snippet="Fact Check: old photo.", provider=self.name, rank=1),
            ]

    evidence = await EvidencePipeline(web=[Reuters()]).answer("bridge", SAMPLE)
    assert [(e.url.split("/")[3], e.kept) for e in evidence] == [("world", True), ("fact-check", False)]
    assert evidence[0].reliability == "reliable"


async def test_a_configuration_that_asks_for_pages_gets_the_pipeline_as_its_web_searcher(tmp_path: Path) -> None:
    from debates.config_loader import load_config
    from m3d_agents.backends.factory import BackendPool
    from retrieval.runpath import open_retrieval

    EvidenceStore(tmp_path / "evidence.sqlite", "record").close()
    pool = BackendPool()
    store = tmp_path / "evidence.sqlite"
    sources = open_retrieval(load_config("agentfact").retrieval, pool, backend=pool.default_backend, mode="replay", store_path=store)
    try:
        assert isinstance(sources.searchers["web"], EvidencePipeline)
        assert [p.name for p in sources.searchers["web"].web] == ["serper", "duckduckgo"]
        assert sources.searchers["web"].config.web_first_available, "asked in order: the first that finds results answers alone"
        snippets = open_retrieval(load_config("t2agent").retrieval, pool, backend=pool.default_backend, mode="replay", store_path=store)
        assert not isinstance(snippets.searchers["web"], EvidencePipeline)
        await snippets.close()
    finally:
        await sources.close()
        await pool.close()
