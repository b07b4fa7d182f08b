"""Answers to the disambiguation queries that agents ask during a debate.

Two implementations of :class:`retrieval.interfaces.QueryAnswerer`:

- :class:`SearchAnswerer` asks search providers (web search, Wikipedia, a local corpus) and turns
  their results into rated, leakage-filtered evidence, through the store like every provider call;
- :class:`GatheredEvidenceAnswerer` searches the pages already gathered for the sample, passage by
  passage with BM25. It needs no network, so it answers queries in offline replay too.
"""

from __future__ import annotations

import logging
import re
from typing import Sequence

from m3d_agents.backends.metering import UsageLedger
from m3d_agents.evidence import Evidence, EvidenceKind
from m3d_agents.sample import Sample
from m3d_agents.redaction import redact
from retrieval.attempts import ReplayMisses, attempt
from retrieval.domains import host_of
from retrieval.leakage import Candidate, LeakageFilter, capped
from retrieval.pipeline import EvidencePipeline
from retrieval.providers.base import DatedWebSearch, SearchHit, WebSearch, search_web
from retrieval.providers.local_corpus import CorpusDocument, LocalCorpus
from retrieval.reliability import ReliabilityRater
from retrieval.report import EvidenceLog
from retrieval.store import EvidenceStore

log = logging.getLogger(__name__)


def _kind_for(provider: str) -> EvidenceKind:
    if provider == "wikipedia":
        return "wikipedia"
    if provider.startswith("corpus") or provider == "climate_fever":
        return "corpus"
    return "answer"


class SearchAnswerer:
    """Asks each provider in turn; one that fails is logged and skipped, so a query always gets an answer
    (possibly "nothing found") instead of ending the debate that asked it. With ``first_only`` the
    providers are a fallback chain: the first that returns hits answers alone."""

    def __init__(
        self,
        providers: Sequence[WebSearch],
        *,
        store: EvidenceStore | None = None,
        rater: ReliabilityRater | None = None,
        leakage: LeakageFilter | None = None,
        limit: int = 3,
        log: EvidenceLog | None = None,
        replay_misses: ReplayMisses = "raise",
        first_only: bool = False,
    ) -> None:
        self.providers = list(providers)
        self.first_only = first_only
        self.store = store
        self.rater = rater or ReliabilityRater(store=store)
        self.leakage = leakage or LeakageFilter(self.rater.ratings)
        self.limit = limit
        self.log = log
        self.replay_misses = replay_misses

    async def _hits(self, provider: WebSearch, query: str, sample: Sample) -> list[SearchHit]:
        network = not getattr(provider, "offline", False)
        asked = False
        settings = self.leakage.settings
        before = sample.metadata.claim_date if settings.enabled and settings.search_date_cap else None
        before = before if isinstance(provider, DatedWebSearch) else None

        async def search() -> list[SearchHit]:
            nonlocal asked
            asked = True
            if self.log is not None and network:
                self.log.network_fetch(sample.id)
            return await search_web(provider, query, self.limit, before)

        store = self.store
        hits = await attempt(
            lambda: store.fetch(provider.name, capped(query, before), search, list[SearchHit]) if store is not None else search(),
            self.replay_misses,
        )
        if isinstance(hits, Exception):
            log.warning("provider %s could not answer %r: %s", provider.name, query, redact(str(hits)))
            if self.log is not None:
                self.log.failed(sample.id, provider.name, str(hits))
            return []
        if self.log is not None:
            self.log.answered(sample.id, provider.name, len(hits), from_store=not asked and self.store is not None)
        return hits

    async def answer(self, query: str, sample: Sample, ledger: UsageLedger | None = None) -> list[Evidence]:
        if not query.strip():
            return []
        candidates: list[Candidate] = []
        for provider in self.providers:
            hits = await self._hits(provider, query, sample)
            for hit in hits[: self.limit]:
                if not hit.snippet:
                    continue
                domain = host_of(hit.url) or None
                reliability, _note = await self.rater.rate(domain, ledger)
                evidence = Evidence(
                    kind=_kind_for(provider.name), url=hit.url, domain=domain, reliability=reliability,
                    published=hit.published, title=hit.title, text=hit.snippet,
                    reason=f"answer to the query {query!r} from {provider.name} (rank {hit.rank + 1})",
                )
                candidates.append(Candidate(evidence=evidence))
            if self.first_only and hits:
                break
        kept, _report = self.leakage.apply(candidates, sample.metadata.claim_date)
        if self.log is not None:
            self.log.evidence(sample.id, kept)
        return [e for e in kept if e.kept]


_PARAGRAPHS = re.compile(r"\n\s*\n|\n")


def passages(text: str, max_chars: int = 600) -> list[str]:
    """Paragraphs packed into passages of at most about ``max_chars`` characters."""
    out: list[str] = []
    current = ""
    for paragraph in (p.strip() for p in _PARAGRAPHS.split(text)):
        if not paragraph:
            continue
        if current and len(current) + len(paragraph) + 1 > max_chars:
            out.append(current)
            current = ""
        current = f"{current}\n{paragraph}" if current else paragraph
        while len(current) > max_chars * 2:
            out.append(current[:max_chars])
            current = current[max_chars:]
    if current:
        out.append(current)
    return out


class GatheredEvidenceAnswerer:
    """Finds the passages of the sample's own kept evidence that best match a query."""

    def __init__(self, source: EvidencePipeline, limit: int = 3) -> None:
        self.source = source
        self.limit = limit
        self._indexes: dict[str, tuple[LocalCorpus, dict[str, Evidence]] | None] = {}

    async def answer(self, query: str, sample: Sample, ledger: UsageLedger | None = None) -> list[Evidence]:
        index = await self._index(sample, ledger)
        if index is None or not query.strip():
            return []
        corpus, parents = index
        answers = []
        for hit in await corpus.search_documents(query, self.limit):
            parent = parents[hit.document.id.split("#")[0]]
            answers.append(
                Evidence(
                    kind="answer", url=parent.url, domain=parent.domain, reliability=parent.reliability,
                    published=parent.published, title=parent.title, text=hit.document.text, language=parent.language,
                    reason=f"passage of {parent.id} matching the query {query!r}",
                )
            )
        return answers

    async def _index(self, sample: Sample, ledger: UsageLedger | None) -> tuple[LocalCorpus, dict[str, Evidence]] | None:
        if sample.id not in self._indexes:
            recent = self.source.recent(sample.id)
            gathered = recent.evidence if recent is not None else await self.source.gather(sample, ledger)
            evidence = [e for e in gathered if e.kept and e.url and e.text]
            documents = [
                CorpusDocument(id=f"{e.id}#{i}", text=passage, title=e.title)
                for e in evidence
                for i, passage in enumerate(passages(e.text))
            ]
            self._indexes[sample.id] = (
                (LocalCorpus.build(documents, name=f"evidence-{sample.id}"), {e.id: e for e in evidence}) if documents else None
            )
        return self._indexes[sample.id]
