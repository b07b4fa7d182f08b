"""Evidence for a run: a configuration's ``retrieval:`` block and the run's choices turned into the
evidence sources that every sample of the run shares.

Only the run session (:class:`debates.session.RunSession`) opens them, once per run, and every
front-end runs through a session (``m3d check``, ``m3d debate``, ``m3d evaluate`` in one process or
on Ray workers, ``m3d reproduce``, ``m3d serve``'s pages, the notebooks). What it opens:

- ``evidence_source``: the pipeline (reverse image search, caption search, Wikipedia, pages,
  extraction, reliability, the leakage filter, summaries) behind the evidence store;
- ``query_answerer``: answers the queries debaters ask (web search, else the gathered pages);
- ``searchers``: ``web``, ``wikipedia`` and ``corpus`` search for agents that search as an action;
- ``log``: collects each sample's :class:`~m3d_agents.verdict.EvidenceReport`;
- ``policy``: the run's :class:`~retrieval.policy.EvidencePolicy`, whose rater and leakage filter
  the pipeline and the answerers share.

Modes (``--retrieval``):

- ``live``: the providers whose keys are in the environment are asked every time; the store
  records every answer (and overwrites older ones);
- ``record``: answers the store already holds are reused, the rest are asked and recorded;
- ``replay``: answers come from the store alone, through a guard that refuses every fetch; a
  question never recorded is reported as that provider's failure;
- ``off``: nothing is gathered, and the report says so.

Without ``--retrieval`` a configuration with a ``retrieval:`` block runs in ``record`` mode and
one without runs with retrieval off. A provider that cannot run (no key) or fails (no network, a
refusal) is reported and the run goes on. :func:`replay_mr2` is the fifth way: a recorded MR2
trace (``--replay-mr2``) answers from its own files, never online.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from m3d_agents.backends.config import default_cache_root
from m3d_agents.backends.factory import Backend, BackendPool
from m3d_agents.errors import InputError
from m3d_agents.verdict import RetrievalMode
from retrieval.answerer import GatheredEvidenceAnswerer, SearchAnswerer
from retrieval.config import RetrievalConfig
from retrieval.fetch import Fetcher
from retrieval.guards import FetchGuard, OfflineGuard
from retrieval.interfaces import EvidenceSource, QueryAnswerer
from retrieval.pipeline import assemble_pipeline, mr2_replay_pipeline
from retrieval.policy import EvidencePolicy
from retrieval.providers.base import ReverseImageSearch, WebSearch
from retrieval.providers.registry import SEARCH_PROVIDERS, ProviderSetup, ProviderUnavailable
from retrieval.report import EvidenceLog
from retrieval.store import EvidenceStore, StoreMode

MODES: tuple[RetrievalMode, ...] = ("live", "record", "replay", "off")
STORE_MODES: dict[RetrievalMode, StoreMode] = {"live": "refresh", "record": "record", "replay": "replay"}


@dataclass
class RunRetrieval:
    """The evidence sources of one run, shared by all its samples; close it when the run ends."""

    mode: RetrievalMode
    log: EvidenceLog | None
    """Collects each sample's evidence report; None for sources a caller opened without one (no report)."""
    policy: EvidencePolicy | None = None
    """The run's evidence policy, whose rater and filter the sources share; None for sources opened
    outside a run path (a test's), which then take the one the run session builds from the configuration."""
    evidence_source: EvidenceSource | None = None
    query_answerer: QueryAnswerer | None = None
    searchers: dict[str, QueryAnswerer] = field(default_factory=dict)
    store: EvidenceStore | None = None
    fetcher: Fetcher | None = None

    async def close(self) -> None:
        if self.fetcher is not None:
            await self.fetcher.close()
        if self.store is not None:
            self.store.close()


def parse_mode(value: str | None) -> RetrievalMode | None:
    """``--retrieval``'s value, checked; None leaves the choice to the configuration."""
    if value is None:
        return None
    if value not in MODES:
        raise InputError("retrieval", f"{value!r} is not one of {', '.join(MODES)}")
    return value


def open_retrieval(
    settings: RetrievalConfig | None,
    pool: BackendPool,
    *,
    backend: str,
    mode: RetrievalMode | None = None,
    store_path: Path | None = None,
    guard: FetchGuard | None = None,
) -> RunRetrieval:
    """The evidence sources of a run whose configuration has the ``retrieval:`` block ``settings``
    (None: it has none); see the module docstring for the modes.

    ``backend`` is the backend of the run's calls (its override, else the configuration's, else the
    default): summaries use the block's ``summary.backend``, else this one; reliability judgements
    use this one. ``guard`` replaces the fetch guard (tests only; the command line never passes one).
    """
    chosen: RetrievalMode = mode or ("record" if settings is not None else "off")
    if chosen == "off":
        why = "--retrieval off" if settings is not None else "the configuration has no retrieval block; --retrieval live turns it on"
        return RunRetrieval(mode="off", log=EvidenceLog("off", why), policy=EvidencePolicy(settings))
    note = ""
    if settings is None:
        settings = RetrievalConfig()
        note = "the configuration has no retrieval block, so the library defaults were used"
    path = store_path or settings.store_path or default_cache_root() / "evidence.sqlite"
    store = EvidenceStore(path, STORE_MODES[chosen])
    try:
        return _open(settings, pool, backend, chosen, store, guard, note)
    except BaseException:
        store.close()
        raise


def _open(settings: RetrievalConfig, pool: BackendPool, backend: str, chosen: RetrievalMode, store: EvidenceStore,
          guard: FetchGuard | None, note: str) -> RunRetrieval:
    fetcher = Fetcher(settings.fetch, OfflineGuard() if chosen == "replay" else guard or FetchGuard())
    not_run: dict[str, str] = {}
    reverse: list[ReverseImageSearch] = _providers(settings.reverse_image, settings, fetcher, chosen, not_run)
    web: list[WebSearch] = _providers(settings.web_search, settings, fetcher, chosen, not_run)
    wikipedia: WebSearch = _providers(["wikipedia"], settings, fetcher, chosen, not_run)[0]
    log = EvidenceLog(chosen, note, not_run, image_providers=settings.reverse_image)
    summaries = settings.summary.enabled
    judge: Backend | None = (
        pool.get(backend) if (settings.rate_sources and settings.judge_unknown_domains)
        or (summaries and not settings.summary.backend) else None
    )
    writer = pool.get(settings.summary.backend) if summaries and settings.summary.backend else judge
    policy = EvidencePolicy(settings, judge=judge, store=store)
    misses: Literal["report"] = "report"
    pipeline = assemble_pipeline(
        settings, judge, store, reverse, web, fetcher, text_search=[wikipedia], summary_backend=writer, log=log,
        replay_misses=misses, policy=policy,
    )

    def answerer(providers: list[WebSearch], first_only: bool = False, limit: int = settings.query_results) -> SearchAnswerer:
        return SearchAnswerer(
            providers, store=store, rater=policy.rater, leakage=policy.leakage, limit=limit, log=log,
            replay_misses=misses, first_only=first_only,
        )

    searchers: dict[str, QueryAnswerer] = {"wikipedia": answerer([wikipedia], limit=settings.wikipedia_results)}
    if web:
        searchers["web"] = pipeline if settings.web_answers == "pages" else answerer(web, settings.web_first_available)
    corpus = _corpus(settings)
    if corpus is not None:
        searchers["corpus"] = answerer([corpus])
    query_answerer: QueryAnswerer = searchers["web"] if web else GatheredEvidenceAnswerer(pipeline, settings.query_results)
    return RunRetrieval(
        mode=chosen, log=log, policy=policy, evidence_source=pipeline, query_answerer=query_answerer, searchers=searchers,
        store=store, fetcher=fetcher,
    )


def replay_mr2(root: Path, settings: RetrievalConfig | None = None, summariser: Backend | None = None) -> RunRetrieval:
    """The evidence of a recorded MR2 trace (``--replay-mr2``), never online.

    The trace is read as recorded (up to 8 of its pages, both its image and its caption search),
    under the run's evidence policy: the configuration's leakage settings, reliability list and
    judging of unknown domains. Debaters' queries (``query_answerer``) and searching agents' web
    queries (``searchers["web"]``) are both answered from the pages recorded for the claim;
    ``summariser`` summarises them first.
    """
    log = EvidenceLog("replay", f"answers recorded in the MR2 trace at {root}")
    recorded = RetrievalConfig(max_pages=8)
    if settings is not None:
        recorded = recorded.model_copy(update={
            "leakage": settings.leakage, "reliability_list": settings.reliability_list,
            "judge_unknown_domains": settings.judge_unknown_domains, "rate_sources": settings.rate_sources,
        })
    pipeline = mr2_replay_pipeline(root, summariser, config=recorded, log=log)
    answerer = GatheredEvidenceAnswerer(pipeline)
    policy = pipeline.policy or EvidencePolicy(pipeline.config)
    return RunRetrieval(mode="replay", log=log, policy=policy, evidence_source=pipeline, query_answerer=answerer,
                        searchers={"web": answerer})


def _providers(names: list[str], settings: RetrievalConfig, fetcher: Fetcher, mode: RetrievalMode,
               not_run: dict[str, str]) -> list[Any]:
    """The providers ``names`` (checked for their lists when the configuration was loaded), built in order through the registry; one that cannot run in this run
    (no key, a setting it needs) is reported in ``not_run``, not built. Replay needs no key: nothing is asked."""
    built: list[Any] = []
    for name in names:
        provider = SEARCH_PROVIDERS.get(name)
        setup = ProviderSetup(name=name, fetcher=fetcher, configured_endpoint=settings.endpoints.configured(provider.endpoint_name),
                              endpoint_name=provider.endpoint_name, replay=mode == "replay", retrieval=settings)
        try:
            built.append(provider.build(setup))
        except ProviderUnavailable as exc:
            not_run[name] = str(exc)
    return built


def _corpus(settings: RetrievalConfig) -> WebSearch | None:
    if settings.corpus is None:
        return None
    from retrieval.providers.local_corpus import LocalCorpus

    reranker = None
    if settings.corpus_rerank:
        from retrieval.rerank import MiniLMReranker

        reranker = MiniLMReranker()
    if settings.corpus == "climate_fever":
        from retrieval.climate_fever import load_climate_fever

        return load_climate_fever(reranker)
    return LocalCorpus.from_jsonl(Path(settings.corpus), reranker=reranker)
