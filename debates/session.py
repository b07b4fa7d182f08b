"""One run session for every front-end: backends, retrieval and the evidence store opened once, samples run, all closed.

Every way of running a configuration (``m3d check``, ``m3d debate``, ``m3d evaluate`` in one
process or on Ray workers, ``m3d reproduce``, ``m3d select-tools``, the web page, the notebooks)
opens a :class:`RunSession` and runs its samples through it:

- on entry it opens the backend pool (when given backend settings rather than a pool), the run's
  evidence sources (``--retrieval live|record|replay|off`` over the SQLite evidence store, or a
  recorded MR2 trace with ``--replay-mr2``) and the run's evidence policy, once for all samples;
- :meth:`RunSession.run` builds each sample's :class:`~debates.strategy.RunContext` (evidence
  source, query answerer, searchers, evidence log and policy, people in seats, streaming
  callbacks, seed) and runs the configuration's strategy with :func:`run_strategy`, which has no
  branch on a strategy's or a configuration's name;
- on exit, whether the run ended, failed or was cancelled, it closes what it opened.

So a front-end cannot forget retrieval or leave a store open, and each choice above is made in
one place.
"""

from __future__ import annotations

import asyncio
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Iterable, Mapping, TypedDict, TypeVar, Unpack

from debates.config_loader import load_config
from debates.strategy import STRATEGIES, MessageCallback, RunContext, StrategyConfig, TurnCallback, check_person_seats, derive_seed
from m3d_agents.backends.config import BackendSettings
from m3d_agents.backends.factory import BackendPool
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.errors import InputError
from m3d_agents.isolation import ParserPool, collecting_losses, using
from m3d_agents.sample import InputLimits, Sample
from m3d_agents.verdict import RetrievalMode, Verdict
from retrieval.policy import EvidencePolicy

from m3d_agents.evidence import Evidence

if TYPE_CHECKING:
    from retrieval.interfaces import QueryAnswerer
    from retrieval.runpath import RunRetrieval


def sample_seed(run_seed: int, sample_id: str) -> int:
    """A sample's seed from the run's seed and the sample's id, so a resumed or distributed run gives each sample the seed it would have had."""
    return derive_seed(run_seed, sample_id)


async def run_sample(
    config: str | Path | StrategyConfig,
    sample: Sample,
    pool: BackendPool,
    *,
    backend: str | None = None,
    limits: InputLimits | None = None,
    seed: int = 0,
    **options: Any,
) -> Verdict:
    """Run ``config`` (a built-in name, a YAML path, or a loaded configuration) on ``sample`` in a one-sample
    :class:`RunSession` over ``pool`` (which stays open): how an embedding application or a test runs one post.

    ``backend`` overrides the backend of every seat. ``options`` are the evidence sources the caller opened
    itself (``evidence_source``, ``query_answerer``, ``searchers``, ``evidence_log``, ``evidence_policy``;
    without any, retrieval is off) and the sample's own parts (:class:`SampleParts`: evidence, people in
    seats, streaming callbacks, a ledger). Without an ``evidence_policy`` the configuration's own
    ``retrieval:`` settings make one, as the session does for every run.
    """
    from retrieval.runpath import RunRetrieval

    given = {name: options.pop(name) for name in SOURCE_OPTIONS if name in options}
    sources = RunRetrieval(
        mode="live" if given.get("evidence_source") is not None else "off", log=given.get("evidence_log"),
        policy=given.get("evidence_policy"), evidence_source=given.get("evidence_source"),
        query_answerer=given.get("query_answerer"), searchers=dict(given.get("searchers") or {}),
    )
    parts = SampleParts(seed=seed, **options)  # type: ignore[typeddict-item]
    async with RunSession(config, pool, backend=backend, limits=limits, sources=sources) as session:
        return await session.run(sample, **parts)


SOURCE_OPTIONS = ("evidence_source", "query_answerer", "searchers", "evidence_log", "evidence_policy")
"""What :func:`run_sample` takes as the run's evidence sources rather than as the sample's parts."""


async def run_strategy(config: StrategyConfig, sample: Sample, ctx: RunContext) -> Verdict:
    """The configuration's strategy on ``sample`` in ``ctx``, with what retrieval did for it on the verdict.

    Pages, images and videos are parsed in ``ctx.parsers`` (the process's default pool when None); the
    items a parser lost are named in the verdict's diagnostics (``items_lost``)."""
    with ExitStack() as scope:
        if ctx.parsers is not None:
            scope.enter_context(using(ctx.parsers))
        lost = scope.enter_context(collecting_losses())
        try:
            verdict = await STRATEGIES.get(config.strategy)(config).run(sample, ctx)
        finally:
            report = ctx.evidence_log.report(sample.id) if ctx.evidence_log is not None else None
    update: dict[str, Any] = {}
    if report is not None:
        update["evidence_report"] = report
    if lost and verdict.diagnostics is not None:
        update["diagnostics"] = verdict.diagnostics.model_copy(update={"items_lost": list(lost)})
    return verdict.model_copy(update=update) if update else verdict


T = TypeVar("T")


def _opened(part: T | None) -> T:
    if part is None:
        raise RuntimeError("the run session is not open: use it as `async with RunSession(...)`")
    return part


class SampleParts(TypedDict, total=False):
    """What one sample brings to its run context, beside what the run shares."""

    seed: int
    """The sample's seed (a batch derives it with :func:`sample_seed`; default 0)."""
    human_seats: Mapping[str, Callable[..., Any]] | None
    """Seat name -> a person's input function."""
    on_turn: TurnCallback | None
    on_message: MessageCallback | None
    evidence: list[Evidence] | None
    """Evidence given with the sample (a recorded trace's)."""
    gold_evidence: list[Evidence] | None
    """A data set's own evidence (only an evidence-bounded setting reads it)."""
    ledger: UsageLedger | None
    """Receives the sample's model calls (a fresh one when absent)."""


@dataclass(frozen=True)
class SessionSpec:
    """What a session opens, without its live objects: a recipe that travels to another process (a Ray
    worker), which opens the same session on its own backend pool."""

    config: StrategyConfig
    backend: str | None = None
    retrieval: RetrievalMode | None = None
    evidence_store: Path | None = None
    replay_mr2: Path | None = None
    summarise: bool = False
    limits: InputLimits | None = None

    def session(self, pool: BackendPool) -> "RunSession":
        """The session this recipe describes, on ``pool`` (which the caller keeps and closes)."""
        return RunSession(
            self.config, pool, backend=self.backend, retrieval=self.retrieval, evidence_store=self.evidence_store,
            replay_mr2=self.replay_mr2, summarise=self.summarise, limits=self.limits,
        )


class RunSession:
    """One run of one configuration; use it as ``async with RunSession(...) as session``.

    - ``config``: a loaded configuration, a built-in name or a YAML path;
    - ``pool``: backend settings (the session opens the pool and closes it) or a pool (closed by the
      session only with ``close_pool=True``);
    - ``backend``: overrides the backend of every seat and call (``--backend``);
    - ``retrieval`` and ``evidence_store``: ``--retrieval`` and ``--evidence-store`` (None: the
      configuration decides, see :mod:`retrieval.runpath`);
    - ``replay_mr2`` and ``summarise``: answer from a recorded MR2 trace instead (``--replay-mr2``),
      its pages summarised by the run's backend first with ``summarise``;
    - ``limits``: the input limits every sample is checked against;
    - ``sources``: evidence sources the caller opened itself (an embedding application's or a test's);
      the session uses them as they are and leaves them open; without a policy of their own they are
      held to the one the session builds from the configuration's ``retrieval:`` block;
    - ``default_query_answerer``: answers the queries debaters ask when the run's evidence sources
      have no answerer (retrieval off): a notebook's offline corpus, for example;
    - ``parsers``: a parser pool the caller owns and closes (the web server's, shared by its debates);
      without one the session makes its own from the configuration's ``isolation:`` settings, which
      starts on the first page, image or video it parses and is shut down, workers and all, when the
      session closes (see :mod:`m3d_agents.isolation`).
    """

    def __init__(
        self,
        config: StrategyConfig | str | Path,
        pool: BackendPool | BackendSettings,
        *,
        backend: str | None = None,
        retrieval: RetrievalMode | None = None,
        evidence_store: Path | None = None,
        replay_mr2: Path | None = None,
        summarise: bool = False,
        limits: InputLimits | None = None,
        sources: RunRetrieval | None = None,
        default_query_answerer: QueryAnswerer | None = None,
        close_pool: bool = False,
        parsers: ParserPool | None = None,
    ) -> None:
        if replay_mr2 is not None and (retrieval is not None or evidence_store is not None):
            raise InputError("retrieval", "--replay-mr2 replays the trace's own evidence; leave out --retrieval and --evidence-store")
        self.config = config if isinstance(config, StrategyConfig) else load_config(config)
        self._settings = pool if isinstance(pool, BackendSettings) else None
        self._pool = pool if isinstance(pool, BackendPool) else None
        self._close_pool = close_pool or self._settings is not None
        self.backend = backend
        self.requested_mode = retrieval
        self.evidence_store = evidence_store
        self.replay_mr2 = replay_mr2
        self.summarise = summarise
        self.limits = limits
        self._given_sources = sources
        self.default_query_answerer = default_query_answerer
        self._sources: RunRetrieval | None = None
        self._policy: EvidencePolicy | None = None
        self._given_parsers = parsers
        self._parsers: ParserPool | None = None

    @property
    def pool(self) -> BackendPool:
        return _opened(self._pool)

    @property
    def sources(self) -> RunRetrieval:
        """The run's evidence sources, opened once for every sample."""
        return _opened(self._sources)

    @property
    def policy(self) -> EvidencePolicy:
        """The run's evidence policy: its leakage filter and source ratings, built once for every sample."""
        return _opened(self._policy)

    @property
    def parsers(self) -> ParserPool:
        """Where the run's pages, images and videos are parsed: one bounded pool of worker processes."""
        return _opened(self._parsers)

    @property
    def mode(self) -> RetrievalMode:
        """Where this run's evidence comes from, as chosen (live, record, replay or off)."""
        return self.sources.mode

    @property
    def backend_name(self) -> str:
        """The backend of the run's calls: the override, else the configuration's, else the default."""
        return self.backend or self.config.backend or self.pool.default_backend

    @property
    def vision(self) -> bool:
        """Whether that backend sees images (what the command line says about tool findings)."""
        return self.pool.get(self.backend_name).vision

    def spec(self) -> SessionSpec:
        """The recipe of this session (its retrieval mode as chosen), for a worker that opens its own."""
        store = self.evidence_store.resolve() if self.evidence_store is not None else None
        mode = None if self.replay_mr2 is not None else self.mode
        trace = self.replay_mr2.resolve() if self.replay_mr2 is not None else None
        return SessionSpec(config=self.config, backend=self.backend, retrieval=mode, evidence_store=store,
                           replay_mr2=trace, summarise=self.summarise, limits=self.limits)

    def check_seats(self, names: Iterable[str], source: str | None = None) -> None:
        """Every seat in ``names`` is one a person may take in this run's configuration (``--human-seat``):
        checked here for every front-end, before the session opens when the front-end asks, and for every
        sample it runs; ``source`` is how the user named the configuration, for the hint."""
        check_person_seats(self.config, names, source)

    def trace_sample(self, sample_id: str | None) -> Sample:
        """A claim of the replayed MR2 trace (``--replay-mr2`` with ``--sample-id``)."""
        from retrieval.providers.mr2_trace import MR2Trace

        if self.replay_mr2 is None:
            raise InputError("replay-mr2", "no MR2 trace is replayed in this run")
        trace = MR2Trace(self.replay_mr2)
        if sample_id is None:
            raise InputError("sample_id", f"--replay-mr2 needs --sample-id; the trace has {', '.join(trace.ids())}")
        return trace.sample(sample_id)

    async def open(self) -> "RunSession":
        """Open the pool and the evidence sources (what ``async with`` does on entry)."""
        if self._sources is not None:
            return self
        if self._pool is None:
            assert self._settings is not None
            self._pool = BackendPool(self._settings)
        try:
            sources = self._open_sources()
        except BaseException:
            await self._close_pool_if_owned()
            raise
        self._sources = sources
        self._policy = sources.policy or EvidencePolicy(self.config.retrieval)
        self._parsers = self._given_parsers or ParserPool(self.config.isolation)
        return self

    def _open_sources(self) -> RunRetrieval:
        from retrieval import runpath

        if self._given_sources is not None:
            return self._given_sources
        if self.replay_mr2 is not None:
            summariser = self.pool.get(self.backend_name) if self.summarise else None
            return runpath.replay_mr2(self.replay_mr2, self.config.retrieval, summariser)
        return runpath.open_retrieval(self.config.retrieval, self.pool, backend=self.backend_name,
                                      mode=self.requested_mode, store_path=self.evidence_store)

    async def close(self) -> None:
        """Close the evidence sources the session opened, then the pool it owns; safe to call twice."""
        sources, self._sources, self._policy = self._sources, None, None
        parsers, self._parsers = self._parsers, None
        try:
            if sources is not None and sources is not self._given_sources:
                await sources.close()
        finally:
            try:
                if parsers is not None and parsers is not self._given_parsers:
                    await asyncio.to_thread(parsers.close)
            finally:
                await self._close_pool_if_owned()

    async def _close_pool_if_owned(self) -> None:
        pool = self._pool
        if pool is not None and self._close_pool:
            self._pool = None
            await pool.close()

    async def __aenter__(self) -> "RunSession":
        return await self.open()

    async def __aexit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        await self.close()

    def context(self, **parts: Unpack[SampleParts]) -> RunContext:
        """One sample's run context: the run's backends, evidence sources and policy, with the sample's own ``parts``."""
        sources = self.sources
        ledger = parts.get("ledger")
        self.check_seats(parts.get("human_seats") or {})
        return RunContext(
            pool=self.pool, backend=self.backend, limits=self.limits, seed=parts.get("seed", 0),
            evidence=list(parts.get("evidence") or []), gold_evidence=list(parts.get("gold_evidence") or []),
            evidence_source=sources.evidence_source, query_answerer=sources.query_answerer or self.default_query_answerer,
            searchers=dict(sources.searchers), evidence_log=sources.log, evidence_policy=self.policy,
            human_seats=dict(parts.get("human_seats") or {}), on_turn=parts.get("on_turn"), on_message=parts.get("on_message"),
            ledger=ledger if ledger is not None else UsageLedger(), parsers=self.parsers,
        )

    async def run(self, sample: Sample, **parts: Unpack[SampleParts]) -> Verdict:
        """The verdict of the run's configuration on ``sample``, in the sample's :meth:`context`."""
        return await run_strategy(self.config, sample, self.context(**parts))
