"""The evidence pipeline for one sample: reverse image search, pages, scraping, reliability, the
leakage filter, summaries, and the store underneath every provider call.

It implements :class:`retrieval.interfaces.EvidenceSource`. ``gather`` returns every item it
looked at: the kept ones, and the dropped ones with ``kept=False`` and the reason, so a run can
show what was filtered and why. :meth:`EvidencePipeline.collect` also gives the per-rule leakage
counts and the failures (a page that could not be fetched, a provider that refused).

It is also a :class:`retrieval.interfaces.QueryAnswerer`: :meth:`EvidencePipeline.answer` runs one
search query through the web providers, then the same pages, reliability and leakage steps, and a
summary focused on the query; pages that do not help answer it are dropped, and at most
``per_query_items`` are kept (AgentFact's per-query retrieval). Every provider call and summary
goes through the store, so a query answered once is answered again offline.
"""

from __future__ import annotations

import asyncio
import logging
import re
from collections import OrderedDict
from pathlib import Path
from typing import Any, Awaitable, Callable, Literal, Sequence, TypeVar

from pydantic import BaseModel, Field

from m3d_agents.backends.config import default_cache_root
from m3d_agents.backends.factory import Backend
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.errors import BackendError
from m3d_agents.evidence import Evidence, EvidenceKind, Reliability
from m3d_agents.isolation import ItemLost
from m3d_agents.media.images import PreparedImage, load_image
from m3d_agents.redaction import redact
from m3d_agents.sample import Sample
from retrieval.attempts import ReplayMisses, attempt
from retrieval.config import RetrievalConfig
from retrieval.domains import host_of
from retrieval.extract import read_page
from retrieval.fetch import FetchedImage, FetchedPage, Fetcher
from retrieval.guards import FetchGuard
from retrieval.leakage import Candidate, LeakageFilter, LeakageReport, capped
from retrieval.policy import EvidencePolicy
from retrieval.providers.base import (
    DatedWebSearch,
    ImageQuery,
    ReverseImageResult,
    ReverseImageSearch,
    SearchHit,
    WebSearch,
    search_web,
)
from retrieval.reliability import ReliabilityRater
from retrieval.report import IMAGES, PAGES, EvidenceLog
from retrieval.store import EvidenceStore, StoreMiss
from retrieval.summarise import Summariser

log = logging.getLogger(__name__)
T = TypeVar("T")
RECENT_RESULTS = 64
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


class EvidencePipeline:
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
        """The run's evidence policy this pipeline's rater and filter belong to, when a run path built it."""
        self.summariser = summariser
        self.log = log
        self.replay_misses = replay_misses
        self.last_result: GatherResult | None = None
        self.last_ledger: UsageLedger | None = None
        self._recent: OrderedDict[str, GatherResult] = OrderedDict()
        self.last_answer: GatherResult | None = None

    def recent(self, sample_id: str) -> GatherResult | None:
        """The latest result gathered for ``sample_id`` (the last few samples are kept), so that a query
        answerer searching the gathered pages does not gather, and log, them a second time."""
        return self._recent.get(sample_id)

    async def gather(self, sample: Sample, ledger: UsageLedger | None = None) -> list[Evidence]:
        return (await self.collect(sample, ledger)).evidence

    async def collect(self, sample: Sample, ledger: UsageLedger | None = None) -> GatherResult:
        ledger = ledger if ledger is not None else UsageLedger()
        result = GatherResult(sample_id=sample.id)
        images = [load_image(path, field=f"images[{i}]") for i, path in enumerate(sample.images)]
        if not images and self.log is not None:
            self.log.without_image(sample.id)
        hits: list[tuple[SearchHit, HitOrigin]] = []
        context_items: list[Evidence] = []
        for image in images:
            for provider in self.reverse:
                found = await self._ask(
                    result, provider, image.sha256,
                    lambda p=provider, i=image: p.search_image(self._image_query(i)),  # type: ignore[misc]
                    ReverseImageResult, lambda answer: len(answer.pages),
                )
                if found is None:
                    continue
                hits += [(hit, "reverse_image") for hit in found.pages]
                context = describe_reverse_result(found)
                if context:
                    context_items.append(recognised_item(found.provider, context, self.config.recognised))
                if self.config.first_available and found.pages:
                    break
        if self.config.caption_search:
            hits += [(hit, "web_page") for hit in await self._search(result, sample, sample.text, self.config.max_pages * 2)]
        result.image_context = " ".join(item.text for item in context_items) + _titles(hits)
        chosen = _dedupe(hits)[: self.config.max_pages]
        pages = await asyncio.gather(*(self._page(hit, origin, result) for hit, origin in chosen))
        articles = await self._articles(sample, result)
        candidates = _mark_duplicates([page for page in pages if page is not None] + articles)
        for candidate in candidates:
            rating = await self._rating(candidate.evidence.domain, ledger)
            candidate.evidence = candidate.evidence.model_copy(update={"reliability": rating})
        filtered, result.leakage = self.leakage.apply(candidates, sample.metadata.claim_date)
        finished = await asyncio.gather(*(self._finish(e, sample, result.image_context, ledger) for e in filtered))
        result.evidence = [*context_items, *finished]
        if self.log is not None:
            self.log.evidence(sample.id, result.evidence)
        self.last_result, self.last_ledger = result, ledger
        self._recent[sample.id] = result
        while len(self._recent) > RECENT_RESULTS:
            self._recent.popitem(last=False)
        return result

    async def answer(self, query: str, sample: Sample, ledger: UsageLedger | None = None) -> list[Evidence]:
        return (await self.answer_result(query, sample, ledger)).evidence

    async def answer_result(self, query: str, sample: Sample, ledger: UsageLedger | None = None) -> GatherResult:
        """Every item one query turned up, kept or dropped with its reason, plus the leakage counts.

        Pages are summarised for the query in rank order until ``per_query_items`` helpful ones are
        kept, so a query costs at most a few summaries beyond the ones it keeps.
        """
        ledger = ledger if ledger is not None else UsageLedger()
        result = GatherResult(sample_id=sample.id)
        if not query.strip():
            return result
        hits: list[tuple[SearchHit, HitOrigin]] = [
            (hit, "web_page") for hit in await self._search(result, sample, query, self.config.query_pages)
        ]
        pages = await asyncio.gather(*(self._page(hit, origin, result) for hit, origin in _dedupe(hits)))
        candidates = _mark_duplicates([page for page in pages if page is not None])
        for candidate in candidates:
            rating = await self._rating(candidate.evidence.domain, ledger)
            candidate.evidence = candidate.evidence.model_copy(update={"reliability": rating})
        filtered, result.leakage = self.leakage.apply(candidates, sample.metadata.claim_date)
        limit, kept = self.config.per_query_items, 0
        for evidence in filtered:
            if evidence.kept and kept >= limit:
                evidence = evidence.model_copy(
                    update={"kept": False, "reason": f"{evidence.reason}; not read: {limit} items were already kept for the query"}
                )
            elif evidence.kept:
                evidence = await self._finish(evidence, sample, "", ledger, focus=query)
                kept += int(evidence.kept)
            result.evidence.append(evidence)
        if self.log is not None:
            self.log.evidence(sample.id, result.evidence)
        self.last_answer = result
        return result

    async def _search(self, result: GatherResult, sample: Sample, query: str, limit: int) -> list[SearchHit]:
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

    async def _articles(self, sample: Sample, result: GatherResult) -> list[Candidate]:
        """Wikipedia articles (or another text search) for the post's text, their lead sections as evidence."""
        if not self.config.wikipedia or not self.text_search:
            return []
        query = text_query(sample.text)
        found: list[Candidate] = []
        for searcher in self.text_search:
            hits = await self._ask(
                result, searcher, query,
                lambda p=searcher: p.search(query, self.config.wikipedia_results),  # type: ignore[misc]
                list[SearchHit], len,
            )
            for hit in (hits or [])[: self.config.wikipedia_results]:
                if not hit.snippet:
                    continue
                found.append(Candidate(evidence=Evidence(
                    kind="wikipedia" if searcher.name == "wikipedia" else "web_page", url=hit.url,
                    domain=host_of(hit.url) or None, title=hit.title, text=hit.snippet[: self.config.max_page_chars],
                    language=self.config.wikipedia_language if searcher.name == "wikipedia" else None,
                    reason=f"found by {hit.provider} for the post's text {query!r} (rank {hit.rank + 1})",
                )))
        return found

    def _image_query(self, image: PreparedImage) -> ImageQuery:
        template = self.config.public_image_url
        return ImageQuery(image=image, public_url=template.format(sha256=image.sha256) if template else None)

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

    async def _page(self, hit: SearchHit, origin: HitOrigin, result: GatherResult) -> Candidate | None:
        html: str | bytes | None = None
        retrieved_at, problem = None, ""
        if hit.snapshot is not None:
            html, problem = _saved_page(Path(hit.snapshot), self.config.fetch.max_bytes)
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
                extracted = await read_page(html, hit.url)
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

    async def _finish(
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

    async def matched_image(self, url: str, sample: Sample) -> FetchedImage:
        """A matched image, downloaded through the fetch guards and the store (so a replay shows the same
        image), logged under ``images``; raises :class:`BackendError` with the reason when it cannot be had."""
        if self.fetcher is None:
            raise BackendError("no fetcher: this pipeline answers from a recorded trace and downloads nothing")
        fetcher = self.fetcher
        asked = False

        async def download() -> FetchedImage:
            nonlocal asked
            asked = True
            if self.log is not None:
                self.log.network_fetch(sample.id)
            return await fetcher.get_image(url)

        try:
            image = await self._stored(IMAGES, url, download, FetchedImage)
        except BackendError as exc:
            if self.log is not None:
                self.log.failed(sample.id, IMAGES, str(exc))
            raise
        if self.log is not None:
            self.log.answered(sample.id, IMAGES, 1, from_store=not asked and self.store is not None)
        return image

    async def close(self) -> None:
        if self.fetcher is not None:
            await self.fetcher.close()
        if self.store is not None:
            self.store.close()


class _PageFetches:
    """Page fetches appear in the evidence report as one provider."""

    name = PAGES


_PAGE_FETCHER: Any = _PageFetches()


_QUERY_WORD = re.compile(r"[^\W\d_][\w'-]*", re.UNICODE)
_CJK_TEXT = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")


def text_query(text: str, max_words: int = 6) -> str:
    """A short search query from a post: search engines such as Wikipedia's match few words well.

    Links, mentions and stop words go; words that start with a capital (names, places) come
    first, then the longest other words, kept in the order the post uses them. Text in a script
    without spaces (Chinese, Japanese) is cut to its first 40 characters instead.
    """
    cleaned = re.sub(r"https?://\S+|@\w+", " ", text).replace("#", " ")
    if len(_CJK_TEXT.findall(cleaned)) > len(cleaned) / 4:
        return " ".join(cleaned.split())[:40]
    from retrieval.providers.local_corpus import _stopwords

    stop = _stopwords() | {"rt", "via", "amp"}
    words = [w for w in dict.fromkeys(_QUERY_WORD.findall(cleaned)) if w.lower() not in stop and len(w) > 1]
    ranked = sorted(range(len(words)), key=lambda i: (not words[i][0].isupper(), -len(words[i]), i))[:max_words]
    return " ".join(words[i] for i in sorted(ranked)) or " ".join(cleaned.split())[:80]


_FOUND_BY = re.compile(r"^found by \S+ \((full|partial|similar|page|web) match")


def match_kind(evidence: Evidence) -> str | None:
    """How a page's image matched the post's (``full``, ``partial``, ...), as the pipeline recorded it."""
    found = _FOUND_BY.match(evidence.reason)
    return found.group(1) if found else None


def recognised_item(provider: str, context: str, use: Literal["evidence", "summaries"]) -> Evidence:
    """What a reverse image provider recognised, as an item: given to the agents, or (``summaries``)
    kept out of their prompts and recorded with the reason, while the summaries still read it."""
    reason = f"what {provider} recognised in the image"
    if use == "summaries":
        return Evidence(kind="reverse_image", text=context, kept=False,
                        reason=f"{reason}; context for the page summaries only (retrieval.recognised: summaries)")
    return Evidence(kind="reverse_image", text=context, reason=reason)


def describe_reverse_result(found: ReverseImageResult) -> str:
    parts = []
    if found.best_guess:
        parts.append(f"best guess for the image: {', '.join(found.best_guess)}")
    if found.entities:
        parts.append(f"web entities: {', '.join(found.entities[:10])}")
    if parts:
        parts.append(f"{len(found.pages)} pages show the image")
    return "; ".join(parts) + ("." if parts else "")


def _saved_page(path: Path, max_bytes: int) -> tuple[bytes | None, str]:
    """A saved copy of a page, cut at ``max_bytes`` like a fetched one (a longer page costs its parser
    time, not the run), or None and why it cannot be read."""
    try:
        with path.open("rb") as saved:
            return saved.read(max_bytes), ""
    except OSError as exc:
        return None, f"the saved copy of the page cannot be read ({exc.strerror or exc})"


def _titles(hits: list[tuple[SearchHit, HitOrigin]]) -> str:
    titles = [hit.title for hit, origin in hits if origin == "reverse_image" and hit.title][:5]
    return f" Titles of pages showing the image: {' | '.join(titles)}." if titles else ""


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


def _dedupe(hits: list[tuple[SearchHit, HitOrigin]]) -> list[tuple[SearchHit, HitOrigin]]:
    seen: set[str] = set()
    out = []
    for hit, origin in hits:
        key = hit.url.split("#")[0].rstrip("/")
        if key not in seen:
            seen.add(key)
            out.append((hit, origin))
    return out


def open_store(config: RetrievalConfig) -> EvidenceStore:
    return EvidenceStore(config.store_path or default_cache_root() / "evidence.sqlite", config.store_mode)


def build_pipeline(
    config: RetrievalConfig,
    backend: Backend | None = None,
    *,
    store: EvidenceStore | None = None,
    guard: FetchGuard | None = None,
) -> EvidencePipeline:
    """A live pipeline from config; providers whose key is missing fail here, naming the variable."""
    from retrieval.providers.base import require_key
    from retrieval.providers.duckduckgo import DuckDuckGoSearch
    from retrieval.providers.google_vision import KEY_VARIABLE as VISION_KEY
    from retrieval.providers.google_vision import GoogleVisionWebDetection
    from retrieval.providers.serpapi_lens import KEY_VARIABLE as SERPAPI_KEY
    from retrieval.providers.serpapi_lens import SerpApiGoogleLens
    from retrieval.providers.serper import KEY_VARIABLE as SERPER_KEY
    from retrieval.providers.serper import SerperSearch

    fetcher = Fetcher(config.fetch, guard or FetchGuard())
    reverse: list[ReverseImageSearch] = []
    for name in config.reverse_image:
        if name == "google_vision":
            require_key(VISION_KEY, "Google Cloud Vision")
            reverse.append(GoogleVisionWebDetection(fetcher))
        else:
            require_key(SERPAPI_KEY, "SerpAPI Google Lens")
            reverse.append(SerpApiGoogleLens(fetcher))
    web: list[WebSearch] = []
    for web_name in config.web_search:
        if web_name == "serper":
            require_key(SERPER_KEY, "Serper")
            web.append(SerperSearch(fetcher))
        else:
            web.append(DuckDuckGoSearch())
    return assemble_pipeline(config, backend, store or open_store(config), reverse, web, fetcher)


def mr2_replay_pipeline(
    root: Path,
    backend: Backend | None = None,
    *,
    config: RetrievalConfig | None = None,
    store: EvidenceStore | None = None,
    log: EvidenceLog | None = None,
) -> EvidencePipeline:
    """A pipeline that answers from an MR2 trace on disk and never touches the network."""
    from retrieval.providers.mr2_trace import MR2Trace

    config = config or RetrievalConfig(max_pages=8)
    trace = MR2Trace(root)
    return assemble_pipeline(config, backend, store, [trace.reverse_search()], [trace.caption_search()], None, log=log)


def assemble_pipeline(
    config: RetrievalConfig,
    backend: Backend | None,
    store: EvidenceStore | None,
    reverse: Sequence[ReverseImageSearch],
    web: Sequence[WebSearch],
    fetcher: Fetcher | None,
    *,
    text_search: Sequence[WebSearch] = (),
    summary_backend: Backend | None = None,
    log: EvidenceLog | None = None,
    replay_misses: ReplayMisses = "raise",
    policy: EvidencePolicy | None = None,
) -> EvidencePipeline:
    """The parts every pipeline shares: the evidence policy (ratings, rater, leakage filter) and the
    summariser; run paths that choose their own providers (:mod:`retrieval.runpath`) call it too.

    ``backend`` judges unknown domains, unless ``policy`` (the run's, whose rater already has its
    judge) is given; ``summary_backend`` (default: ``backend``) writes summaries.
    """
    policy = policy or EvidencePolicy(config, judge=backend, store=store)
    writer = summary_backend or backend
    summariser = Summariser(writer, config.summary, store) if writer is not None and config.summary.enabled else None
    return EvidencePipeline(
        reverse=reverse, web=web, text_search=text_search, fetcher=fetcher, store=store, rater=policy.rater,
        leakage=policy.leakage, summariser=summariser, config=config, log=log, replay_misses=replay_misses,
        policy=policy,
    )
