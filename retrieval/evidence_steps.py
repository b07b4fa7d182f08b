"""The steps every item of evidence goes through, shared by the gathering of a sample's evidence
(:mod:`retrieval.pipeline`) and the answering of one query with pages (:mod:`retrieval.page_answers`).

Every provider call goes through the evidence store (so a question answered once is answered again
offline), is logged for the sample's evidence report, and when it fails is recorded and skipped; a
page's text is extracted (or its search snippet kept, saying why); each source is rated, the leakage
filter applied, and kept pages summarised. :class:`GatherResult` is what a question turned up: every
item it looked at, kept or dropped with the reason, the leakage counts and the failures.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Awaitable, Callable, Literal, Sequence, TypeVar

from pydantic import BaseModel, Field

from m3d_agents.backends.metering import UsageLedger
from m3d_agents.evidence import Evidence, EvidenceKind, Reliability
from m3d_agents.isolation import ItemLost
from m3d_agents.redaction import redact
from m3d_agents.sample import Sample
from retrieval.attempts import ReplayMisses, attempt
from retrieval.config import RetrievalConfig
from retrieval.domains import host_of
from retrieval.extract import extract_page
from retrieval.fetch import FetchedPage, Fetcher
from retrieval.leakage import Candidate, LeakageFilter, LeakageReport, capped
from retrieval.policy import EvidencePolicy
from retrieval.providers.base import DatedWebSearch, ReverseImageSearch, SearchHit, WebSearch, search_web
from retrieval.reliability import ReliabilityRater
from retrieval.report import PAGES, EvidenceLog
from retrieval.store import EvidenceStore, StoreMiss
from retrieval.summarise import Summariser

log = logging.getLogger(__name__)
T = TypeVar("T")
HitOrigin = Literal["reverse_image", "web_page"]


class GatherResult(BaseModel):
    sample_id: str
    evidence: list[Evidence] = Field(default_factory=list)
    leakage: LeakageReport = Field(default_factory=LeakageReport)
    failures: list[str] = Field(default_factory=list)
    image_context: str = ""

    @property
    def kept(self) -> list[Evidence]:
        return [e for e in self.evidence if e.kept]


class EvidenceSteps:
    """The steps every item of evidence goes through, whichever question found it: each provider question
    through the store (logged, and recorded when it fails), a page's text, its source's rating, the leakage
    filter, and a summary. :class:`~retrieval.pipeline.EvidencePipeline` gathers a sample's evidence with them
    and :func:`~retrieval.page_answers.answer_query` answers a searching agent's query."""

    def __init__(
        self,
        *,
        reverse: Sequence[ReverseImageSearch] = (),
        web: Sequence[WebSearch] = (),
        text_search: Sequence[WebSearch] = (),
        fetcher: Fetcher | None = None,
        store: EvidenceStore | None = None,
        rater: ReliabilityRater | None = None,
        leakage: LeakageFilter | None = None,
        summariser: Summariser | None = None,
        config: RetrievalConfig | None = None,
        log: EvidenceLog | None = None,
        replay_misses: ReplayMisses = "raise",
        policy: EvidencePolicy | None = None,
    ) -> None:
        """``text_search`` providers are asked for the post's text when ``config.wikipedia`` is on
        (their hits' snippets are the evidence, as Wikipedia's lead sections are). ``log`` receives
        every provider call for the sample's evidence report. ``replay_misses``: with a replay-only
        store, a question that was never recorded either raises :class:`StoreMiss` (the default, for
        callers that must see it) or is reported as that provider's failure and the run goes on."""
        self.reverse = list(reverse)
        self.web = list(web)
        self.text_search = list(text_search)
        self.fetcher = fetcher
        self.store = store
        self.config = config or RetrievalConfig()
        self.rater = rater or (policy.rater if policy is not None else ReliabilityRater(store=store))
        self.leakage = leakage or (policy.leakage if policy is not None else LeakageFilter(self.rater.ratings, self.config.leakage))
        self.policy = policy
        """The run's evidence policy these steps' rater and filter belong to, when a run path built them."""
        self.summariser = summariser
        self.log = log
        self.replay_misses = replay_misses

    async def web_hits(self, result: GatherResult, sample: Sample, query: str, limit: int) -> list[SearchHit]:
        """One web search through the providers: every one pooled, or with ``web_first_available`` the first
        that finds results; capped at the claim date where the leakage settings ask and a provider can."""
        leakage = self.config.leakage
        before = sample.metadata.claim_date if leakage.enabled and leakage.search_date_cap else None
        hits: list[SearchHit] = []
        for searcher in self.web:
            found = await self._ask(
                result, searcher, capped(query, before if isinstance(searcher, DatedWebSearch) else None),
                lambda p=searcher: search_web(p, query, limit, before),  # type: ignore[misc]
                list[SearchHit], len,
            )
            hits += found or []
            if self.config.web_first_available and found:
                break
        return hits

    async def _stored(self, provider: str, query: str, produce: Callable[[], Awaitable[T]], kind: object) -> T:
        if self.store is None:
            return await produce()
        return await self.store.fetch(provider, query, produce, kind)

    async def _ask(
        self,
        result: GatherResult,
        provider: ReverseImageSearch | WebSearch,
        query: str,
        produce: Callable[[], Awaitable[T]],
        kind: object,
        count: Callable[[T], int],
        store_as: str | None = None,
    ) -> T | None:
        """One provider question: through the store (under ``store_as`` or the provider's name), logged,
        and on failure recorded and skipped."""
        network = not getattr(provider, "offline", False)
        asked = False

        async def ask_provider() -> T:
            nonlocal asked
            asked = True
            if self.log is not None and network:
                self.log.network_fetch(result.sample_id)
            return await produce()

        answer = await self._guarded(
            result, provider.name, lambda: self._stored(store_as or provider.name, query, ask_provider, kind)
        )
        if answer is not None and self.log is not None:
            self.log.answered(result.sample_id, provider.name, count(answer), from_store=not asked and self.store is not None)
        return answer

    async def _guarded(self, result: GatherResult, provider: str, work: Callable[[], Awaitable[T]]) -> T | None:
        """A provider that fails is recorded and skipped; a replay miss raises unless ``replay_misses`` is ``report``."""
        outcome = await attempt(work, self.replay_misses)
        if not isinstance(outcome, Exception):
            return outcome
        failure = redact(f"{provider}: {outcome}")
        log.warning("provider failed: %s", failure)
        result.failures.append(failure)
        if self.log is not None:
            self.log.failed(result.sample_id, provider, str(outcome))
        return None

    async def _rating(self, domain: str | None, ledger: UsageLedger) -> Reliability:
        try:
            rating, _note = await self.rater.rate(domain, ledger)
        except StoreMiss:
            if self.replay_misses == "raise":
                raise
            return "unknown"
        return rating

    async def screen(self, candidates: list[Candidate], sample: Sample, ledger: UsageLedger, result: GatherResult) -> list[Evidence]:
        """Pages and articles found for one question: syndicated copies marked, each source rated, the leakage
        filter applied (its counts on ``result``); every item comes back, the dropped ones with their reason."""
        candidates = _mark_duplicates(candidates)
        for candidate in candidates:
            rating = await self._rating(candidate.evidence.domain, ledger)
            candidate.evidence = candidate.evidence.model_copy(update={"reliability": rating})
        filtered, result.leakage = self.leakage.apply(candidates, sample.metadata.claim_date)
        return filtered

    async def read_page(self, hit: SearchHit, origin: HitOrigin, result: GatherResult) -> Candidate | None:
        """The page of ``hit`` as evidence: its article extracted in the parser pool (:func:`extract_page`), or its
        search snippet, saying why; a page the parser lost is named in the failures and the evidence report."""
        html: str | bytes | None = None
        retrieved_at, problem = None, ""
        if hit.snapshot is not None:
            html, problem = saved_page(Path(hit.snapshot), self.config.fetch.max_bytes)
        elif self.fetcher is not None:
            fetcher = self.fetcher
            page = await self._ask(
                result, _PAGE_FETCHER, hit.url, lambda: fetcher.get_page(hit.url), FetchedPage, lambda _page: 1,
                store_as="page",
            )
            if page is not None:
                html, retrieved_at = page.text, page.retrieved_at
            else:
                problem = "the page could not be fetched"
        else:
            problem = "no saved copy of the page, and fetching is off (offline replay)"
        kind: EvidenceKind = origin
        extracted, lost_line = None, None
        if html:
            try:
                extracted = await extract_page(html, hit.url)
            except ItemLost as lost:
                problem = lost_line = lost.line
                if self.log is not None:
                    self.log.lost(result.sample_id, lost.line)
        text = (extracted.text if extracted else "")[: self.config.max_page_chars]
        reason = f"found by {hit.provider} ({hit.match} match, rank {hit.rank + 1})"
        if lost_line is not None:
            result.failures.append(redact(lost_line))
        if not text:
            if not hit.snippet:
                if lost_line is None:
                    result.failures.append(redact(f"{hit.url}: {problem or 'no article text on the page'}"))
                return None
            text = hit.snippet
            reason += f"; search snippet only: {problem or 'no article text on the page'}"
        evidence = Evidence(
            kind=kind,
            url=hit.url,
            domain=host_of(hit.url) or None,
            retrieved_at=retrieved_at,
            published=(extracted.published if extracted else None) or hit.published,
            title=(extracted.title if extracted else None) or hit.title,
            text=text,
            language=extracted.language if extracted else None,
            reason=reason,
            image_url=hit.image_url,
        )
        return Candidate(evidence=evidence, claim_review=bool(extracted and extracted.claim_review))

    async def finish(
        self, evidence: Evidence, sample: Sample, image_context: str, ledger: UsageLedger, focus: str | None = None
    ) -> Evidence:
        if not evidence.kept:
            return evidence
        if self.config.summary.non_english == "exclude" and evidence.language not in (None, "en"):
            return evidence.model_copy(
                update={"kept": False, "reason": f"not in English ({evidence.language}); non-English pages are excluded by config"}
            )
        if evidence.kind == "wikipedia":
            return evidence
        if self.summariser is None:
            if evidence.language not in (None, "en"):
                note = f"not in English ({evidence.language}); not translated: no summariser configured"
                return evidence.model_copy(update={"reason": f"{evidence.reason}; {note}"})
            return evidence
        try:
            return await self.summariser.summarise(evidence, sample.text, image_context, ledger, focus=focus)
        except StoreMiss:
            if self.replay_misses == "raise":
                raise
            return evidence.model_copy(update={"reason": f"{evidence.reason}; no summary: none in the evidence store (replay)"})

    async def close(self) -> None:
        if self.fetcher is not None:
            await self.fetcher.close()
        if self.store is not None:
            self.store.close()



class _PageFetches:
    """Page fetches appear in the evidence report as one provider."""

    name = PAGES


_PAGE_FETCHER: Any = _PageFetches()


def saved_page(path: Path, max_bytes: int) -> tuple[bytes | None, str]:
    """A saved copy of a page (a recorded trace's), cut at ``max_bytes`` like a fetched one, so a longer page
    costs its parser that much and no more; or None and why it cannot be read."""
    try:
        with path.open("rb") as saved:
            return saved.read(max_bytes), ""
    except OSError as exc:
        return None, f"the saved copy of the page cannot be read ({exc.strerror or exc})"


def _mark_duplicates(candidates: list[Candidate]) -> list[Candidate]:
    """Syndicated copies (one story on three tabloid sites) would weigh as three sources: keep the first."""
    first_by_text: dict[str, str] = {}
    for candidate in candidates:
        evidence = candidate.evidence
        key = " ".join(evidence.text.split())
        if key in first_by_text:
            candidate.evidence = evidence.model_copy(
                update={"kept": False, "reason": f"same text as {first_by_text[key]}; kept once"}
            )
        else:
            first_by_text[key] = evidence.id
    return candidates


def distinct_hits(hits: list[tuple[SearchHit, HitOrigin]]) -> list[tuple[SearchHit, HitOrigin]]:
    seen: set[str] = set()
    out = []
    for hit, origin in hits:
        key = hit.url.split("#")[0].rstrip("/")
        if key not in seen:
            seen.add(key)
            out.append((hit, origin))
    return out
