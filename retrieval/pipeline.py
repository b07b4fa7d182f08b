"""The evidence pipeline for one sample: reverse image search, the caption search, Wikipedia, pages,
reliability, the leakage filter and summaries, with the store underneath every provider call.

It implements :class:`retrieval.interfaces.EvidenceSource`. ``gather`` returns every item it
looked at: the kept ones, and the dropped ones with ``kept=False`` and the reason, so a run can
show what was filtered and why. :meth:`EvidencePipeline.collect` also gives the per-rule leakage
counts and the failures (a page that could not be fetched, a provider that refused). The steps an
item goes through are :class:`retrieval.evidence_steps.EvidenceSteps`'.

It is also a :class:`retrieval.interfaces.QueryAnswerer` over the same providers and steps: one
query answered with pages read for it (:mod:`retrieval.page_answers`).
"""

from __future__ import annotations

import asyncio
import re
from collections import OrderedDict
from pathlib import Path
from typing import Literal, Sequence

from m3d_agents.backends.factory import Backend
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.errors import BackendError
from m3d_agents.evidence import Evidence
from m3d_agents.media.images import PreparedImage, load_image
from m3d_agents.sample import Sample
from retrieval.attempts import ReplayMisses
from retrieval.config import RetrievalConfig
from retrieval.domains import host_of
from retrieval.evidence_steps import EvidenceSteps, GatherResult, HitOrigin, distinct_hits
from retrieval.fetch import FetchedImage, Fetcher
from retrieval.leakage import Candidate
from retrieval.page_answers import answer_query
from retrieval.policy import EvidencePolicy
from retrieval.providers.base import ImageQuery, ReverseImageResult, ReverseImageSearch, SearchHit, WebSearch
from retrieval.report import IMAGES, EvidenceLog
from retrieval.store import EvidenceStore
from retrieval.summarise import Summariser

RECENT_RESULTS = 64
__all__ = ["EvidencePipeline", "GatherResult", "assemble_pipeline", "match_kind", "mr2_replay_pipeline", "text_query"]


class EvidencePipeline(EvidenceSteps):
    """A sample's evidence, gathered (:meth:`collect`); and one query's, answered with pages (:meth:`answer`)."""

    _recent: OrderedDict[str, GatherResult] | None = None

    def recent(self, sample_id: str) -> GatherResult | None:
        """The latest result gathered for ``sample_id`` (the last few samples are kept), so that a query
        answerer searching the gathered pages does not gather, and log, them a second time."""
        return self._recent.get(sample_id) if self._recent is not None else None

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
            hits += [(hit, "web_page") for hit in await self.web_hits(result, sample, sample.text, self.config.max_pages * 2)]
        result.image_context = " ".join(item.text for item in context_items) + _titles(hits)
        chosen = distinct_hits(hits)[: self.config.max_pages]
        pages = await asyncio.gather(*(self.read_page(hit, origin, result) for hit, origin in chosen))
        articles = await self._articles(sample, result)
        filtered = await self.screen([page for page in pages if page is not None] + articles, sample, ledger, result)
        finished = await asyncio.gather(*(self.finish(e, sample, result.image_context, ledger) for e in filtered))
        result.evidence = [*context_items, *finished]
        if self.log is not None:
            self.log.evidence(sample.id, result.evidence)
        if self._recent is None:
            self._recent = OrderedDict()
        self._recent[sample.id] = result
        while len(self._recent) > RECENT_RESULTS:
            self._recent.popitem(last=False)
        return result

    async def answer(self, query: str, sample: Sample, ledger: UsageLedger | None = None) -> list[Evidence]:
        return (await self.answer_result(query, sample, ledger)).evidence

    async def answer_result(self, query: str, sample: Sample, ledger: UsageLedger | None = None) -> GatherResult:
        """Every item one query turned up, kept or dropped with its reason (see :mod:`retrieval.page_answers`)."""
        return await answer_query(self, query, sample, ledger)

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


def _titles(hits: list[tuple[SearchHit, HitOrigin]]) -> str:
    titles = [hit.title for hit, origin in hits if origin == "reverse_image" and hit.title][:5]
    return f" Titles of pages showing the image: {' | '.join(titles)}." if titles else ""


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
