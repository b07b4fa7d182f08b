"""How one sample is checked end to end: the Strategy contract and the run context.

A *strategy* turns a :class:`~m3d_agents.sample.Sample` into a :class:`~m3d_agents.verdict.Verdict`:
the group-chat debate (with its protocols), the single check, self-consistency, and the tree
search, fact-checking and video strategies. A *configuration* is a small YAML file that names its
strategy and holds that strategy's settings; ``strategy:`` defaults to ``debate`` when the file
names a ``protocol:``. Every run path (``m3d check``, ``m3d debate``, ``m3d evaluate``, the
notebooks, the web page) goes through :class:`debates.session.RunSession`, which has no branch on a strategy's or
a configuration's name: adding a strategy is one module that registers itself and one YAML file.

The :class:`RunContext` carries what a run gives a strategy (backends, evidence sources and the
run's evidence policy, people in seats, streaming callbacks, the seed) and owns the steps every
strategy shares, so that each is written once: the evidence step (:meth:`RunContext.gather_evidence`),
the seeds (:meth:`RunContext.seed_for`), the answer-taxonomy check (:func:`answer_taxonomy`) and the
Verdict fields every strategy fills (:meth:`RunContext.verdict`). A strategy only says what it
decided and how.
"""

from __future__ import annotations

import hashlib
import inspect
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Awaitable, Callable, ClassVar, Generic, Iterable, Mapping, Protocol, TypeVar

from pydantic import BaseModel, Field, field_validator, model_validator

from debates.fidelity import Departure
from debates.tool_settings import ToolSettings, resolve_tools, tool_problem
from m3d_agents.errors import InputError
from m3d_agents.config_types import PARSE_RETRIES_DOC, ParseRetries, Settings
from m3d_agents.diagnostics import StrategyDiagnostics, UntypedDiagnostics, register_diagnostics
from m3d_agents.evidence import Evidence
from m3d_agents.isolation import IsolationSettings, ParserPool
from m3d_agents.labels import Taxonomy, collapse_label, get_taxonomy
from m3d_agents.registry import Registry
from m3d_agents.sample import InputLimits, Sample
from m3d_agents.verdict import TranscriptTurn, Verdict
from retrieval.config import RetrievalConfig

if TYPE_CHECKING:
    from m3d_agents.backends.factory import Backend, BackendPool
    from m3d_agents.backends.metering import UsageLedger
    from m3d_agents.media.images import PreparedSample
    from retrieval.policy import EvidencePolicy
    from m3d_agents.tools.cards import ToolSetup
    from retrieval.interfaces import EvidenceSource, QueryAnswerer
    from retrieval.report import EvidenceLog

TurnCallback = Callable[[TranscriptTurn], "Awaitable[None] | None"]
"""Called with every finished turn of any strategy, as it finishes: what the CLI, notebooks and
the web page stream. May be a plain function or a coroutine function."""

MessageCallback = Callable[[Any, Any], "Awaitable[None] | None"]
"""Group-chat strategies only: called with every AutoGen message or event and the strategy's state."""


class CallBudget(BaseModel):
    """What one sample can cost under a configuration's own limits, read from the configuration alone."""

    calls: int = Field(ge=0, description="the most model calls of one sample, retries of unreadable answers left out")
    answer_tokens: int | None = Field(None, description="the configuration's cap on each answer; None: the backend's max_tokens")
    counts: str = Field(description="what the bound counts and what it leaves out, in a few words")


class PersonSeat(BaseModel):
    """A seat a person may take in a run of a configuration (``--human-seat NAME``), and what it does there."""

    name: str = Field(description="the seat's name, as --human-seat takes it")
    role: str = Field(description="its role (debater, judge, actor ...)")
    stance: str | None = Field(None, description="the label the seat must defend, when it is assigned one")
    answers: bool = Field(True, description="its turns end in a readable answer; False: it argues without answering")
    sees_images: bool = Field(True, description="it is shown the post's images")
    most_turns: int = Field(1, ge=0, description="the most turns it takes in one run")


MAX_CALLS_PER_SAMPLE = 5000
"""The most model calls one sample may ask for under a configuration's own limits (its :meth:`StrategyConfig.call_budget`):
the costliest built-in configuration asks for 151. A file that multiplies seats, rounds, candidates or steps past this
is refused when it is loaded, saying how many calls it would make, instead of running for hours."""


class StrategyConfig(Settings):
    """What every configuration has; each strategy's configuration model extends it.

    ``backend`` and ``parse_retries`` are declared here, once, because every strategy calls models
    and reads their answers: a front-end or the run session reads ``config.backend`` from any
    configuration, and the bound on re-asks is one decision for all strategies.
    """

    renamed_settings = {"retries": "parse_retries"}

    name: str = Field(description="the configuration's name: run folders, verdicts and reports carry it")
    description: str = Field("", description="what this configuration is for: its setting, and where it departs from its paper")
    strategy: str = Field(description="the registered strategy that runs this configuration")
    backend: str | None = Field(
        None, description="the backend of every model call that names none of its own (a seat's or an agent's backend "
        "wins); None: the run's default backend. --backend overrides both",
    )
    parse_retries: ParseRetries = Field(2, description=PARSE_RETRIES_DOC)
    retrieval: RetrievalConfig | None = Field(
        None,
        description="where the run's evidence comes from (providers, pages, summaries, leakage and language "
        "policy); None: no evidence unless the run asks for it (--retrieval live)",
    )
    paper: str | None = Field(
        None, description="the paper this configuration reproduces or runs a setting of (LLM-Consensus, AgentM3D, "
        "T2Agent, AgentFact, FactGuard, MMD-Agent); such a configuration lists its departures"
    )
    departures: list[Departure] = Field(
        default_factory=list, description="where this configuration knowingly differs from its paper; every run states "
        "them, with the ones it detects (debates.fidelity)"
    )
    tools: dict[str, ToolSettings] = Field(
        default_factory=dict, description="per tool name: a backend of its own, local weights, and what the paper runs "
        "in its place (debates.tool_settings); a tool left out runs on the calling agent's backend"
    )
    isolation: IsolationSettings = Field(
        default_factory=IsolationSettings, description="how pages, images and videos from outside are parsed: in worker "
        "processes, each item within a time and a memory limit, so a parser that crashes or hangs costs that item alone "
        "(m3d_agents.isolation)"
    )

    @field_validator("tools")
    @classmethod
    def _tools_apply(cls, value: dict[str, ToolSettings]) -> dict[str, ToolSettings]:
        for name, settings in value.items():
            problem = tool_problem(name, settings)
            if problem:
                raise ValueError(f"{name}: {problem}")
        return value

    @model_validator(mode="after")
    def _paper_states_departures(self) -> "StrategyConfig":
        ids = [d.id for d in self.departures]
        if len(set(ids)) != len(ids):
            raise ValueError(f"departures: ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
        if self.departures and self.paper is None:
            raise ValueError("departures: name the paper they depart from (paper: ...)")
        return self

    @model_validator(mode="after")
    def _within_call_budget(self) -> "StrategyConfig":
        try:
            budget = self.call_budget()
        except (ValueError, LookupError, InputError):
            return self  # a setting the strategy's own checks refuse, each with its own message
        if budget is not None and budget.calls > MAX_CALLS_PER_SAMPLE:
            raise ValueError(f"the configuration asks for up to {budget.calls} model calls per sample ({budget.counts}), over "
                             f"the limit of {MAX_CALLS_PER_SAMPLE}; use fewer seats, rounds, candidates or steps")
        return self

    def tools_used(self) -> list[str]:
        """The registered tools a run of this configuration may call (for plans and reports); strategies add theirs."""
        return list(self.tools)

    def call_budget(self) -> CallBudget | None:
        """The most a sample can cost under this configuration's limits; None where the strategy gives no bound."""
        return None

    def form(self) -> str:
        """The configuration's form in a few words, for plans (a debate adds its protocol and its seats in order)."""
        return self.strategy

    def image_seats(self) -> list[str | None]:
        """The backends of the seats that read the post's images, one per seat (None: the configuration's own): a
        departure ``when: text_only`` or ``when: vision`` holds where one of them cannot, or can, see images."""
        return [None]

    def person_seats(self) -> list[PersonSeat]:
        """The seats a person may take in a run of this configuration; none unless the strategy offers some.

        The run session checks a run's ``--human-seat`` against these once (:func:`check_person_seats`), and
        the front-ends list and offer them, so no front-end looks inside a strategy's configuration.
        """
        return []

    def seat_taxonomy(self, sample_taxonomy: str) -> str:
        """The label set a person in one of :meth:`person_seats` answers in, for a sample of ``sample_taxonomy``."""
        return sample_taxonomy

    def most_turns(self) -> int | None:
        """The most turns one post can take under this configuration; None for a strategy without turns."""
        return None

    def run_by(self) -> str:
        """What runs this configuration, in a few words (``debate / async``, ``t2agent``)."""
        return self.strategy

    def outline(self) -> str:
        """The settings that make this configuration what it is, on one line."""
        settings = {k: v for k, v in self.model_dump().items() if k not in ("name", "description", "strategy")}
        return f"strategy {self.strategy} · " + ", ".join(f"{k}: {v}" for k, v in settings.items())


def rounds_phrase(config: StrategyConfig) -> str:
    """How long a run of ``config`` can go on, as its seats' turns say: "at most 3 rounds", "one turn per seat"."""
    most = max((seat.most_turns for seat in config.person_seats()), default=1)
    return "one turn per seat" if most == 1 else f"at most {most} rounds"


def check_person_seats(config: StrategyConfig, names: Iterable[str], source: str | None = None, field: str = "human-seat") -> None:
    """Every seat in ``names`` is one a person may take in ``config``; one line naming the problem otherwise.
    ``source`` is how a command-line user named the configuration (a path, for a YAML file): the line then says
    how to list its seats."""
    wanted = list(names)
    if not wanted:
        return
    seats = config.person_seats()
    if not seats:
        raise InputError(field, f"the {config.name} configuration ({config.strategy}) has no seats to take")
    known = {seat.name for seat in seats}
    for name in wanted:
        if name not in known:
            listed = ", ".join(f"{s.name} ({s.role})" for s in seats)
            hint = f" (m3d seats {source} lists them)" if source else ""
            raise InputError(field, f"the {config.name} configuration has no seat named {name!r}; its seats: {listed}{hint}")


def derive_seed(*parts: object) -> int:
    """A seed in [0, 2**31) from its parts, the same on every machine and in every process.

    How every seed of a run is made: a sample's seed is ``derive_seed(run_seed, sample_id)``, and a
    call site's seed within the sample is ``derive_seed(sample_seed, *names)`` (see
    :meth:`RunContext.seed_for`). The parts are joined with ``:`` and hashed with SHA-256; the first
    31 bits are the seed. Unlike arithmetic formulas (``seed * 1000 + i``) two call sites cannot
    collide by their numbers, and unlike Python's ``hash`` the value does not change between
    processes, so a resumed or distributed run asks exactly what it asked before.
    """
    digest = hashlib.sha256(":".join(str(part) for part in parts).encode()).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def answer_taxonomy(config: StrategyConfig, answering: str, sample: Sample) -> Taxonomy:
    """The taxonomy ``config`` answers in, checked to carry over to the sample's before any model is asked.

    Strategies answer in their own label set (the cascade in m3d, AgentFact in factcheck3, T2Agent
    in binary) and :meth:`RunContext.verdict` carries the answer over; a sample whose taxonomy
    cannot take it is the caller's mistake, said in one line naming the configuration.
    """
    source, target = get_taxonomy(answering), get_taxonomy(sample.taxonomy)
    try:
        collapse_label(source.labels[0], source, target)
    except ValueError as exc:
        raise InputError("taxonomy", f"the {config.name} configuration answers in {source.name}: {exc}") from None
    return source


def strategy_field(name: str) -> Any:
    """The ``strategy:`` field of a strategy's own configuration model: fixed to its registered name."""
    return Field(name, description=f"the registered strategy that runs this configuration: {name}")


# RunContext's defaults are imported when a run starts: this module is also read by everything that only reads
# configurations (m3d config, m3d seats), which must not import model clients or AutoGen to do so.


def _new_policy() -> EvidencePolicy:
    from retrieval.policy import EvidencePolicy

    return EvidencePolicy()


def _new_ledger() -> UsageLedger:
    from m3d_agents.backends.metering import UsageLedger

    return UsageLedger()


@dataclass
class RunContext:
    """What one run of one sample gives a strategy. Built fresh per sample: nothing carries over."""

    pool: BackendPool
    backend: str | None = None
    """Overrides the backend of every seat and call of the strategy."""
    limits: InputLimits | None = None
    seed: int = 0
    """The sample's seed (see :func:`derive_seed`); strategies take their call sites' seeds from :meth:`seed_for`."""
    evidence: list[Evidence] = field(default_factory=list)
    """Evidence given with the sample (a recorded trace, a data set's gold evidence)."""
    gold_evidence: list[Evidence] = field(default_factory=list)
    """A data set's own evidence for the sample (RW-Post's ground truth). It usually states the verdict,
    so only an evidence-bounded setting reads it (``agentfact-bounded``); every other strategy ignores it."""
    evidence_source: EvidenceSource | None = None
    """Gathers evidence before a strategy starts (reverse image search, pages, summaries)."""
    query_answerer: QueryAnswerer | None = None
    """Answers the queries that debaters ask during a debate."""
    searchers: Mapping[str, QueryAnswerer] = field(default_factory=dict)
    """Search by kind (``web``, ``wikipedia``, ``corpus``) for strategies whose agents search as an
    action (tree search, fact-checking, the video agent); a kind that is absent is not available."""
    evidence_policy: EvidencePolicy = field(default_factory=_new_policy)
    """The run's leakage filter and source ratings (built once per run by the session); every item a
    source or searcher hands this sample passes it, so no strategy filters with other settings."""
    evidence_log: EvidenceLog | None = None
    """Collects what retrieval did for the sample; the session puts its report on the verdict."""
    human_seats: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    """Seat name -> input function (sync or async; see :mod:`debates.debate_engine.human_input`)."""
    on_turn: TurnCallback | None = None
    on_message: MessageCallback | None = None
    ledger: UsageLedger = field(default_factory=_new_ledger)
    parsers: ParserPool | None = None
    """Where the sample's pages, images and videos are parsed (the run session's pool); None: the process's default pool."""
    started: float = field(default_factory=time.perf_counter)
    _gathered: list[Evidence] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        """Every searcher answers through the run's policy, so evidence that agents search for themselves
        (tools, the retrieval desk, AgentFact's retriever) is screened like the evidence gathered up front."""
        policy = self.evidence_policy
        self.searchers = {kind: policy.searcher(searcher) for kind, searcher in self.searchers.items()}
        if self.query_answerer is not None:
            self.query_answerer = policy.searcher(self.query_answerer)

    async def gather_evidence(self, sample: Sample, *, from_source: bool = True, dropped: bool = False) -> list[Evidence]:
        """The one evidence step: what came with the sample, then what the run's evidence source
        gathers for it, screened by the run's evidence policy.

        ``from_source=False`` asks no source (a strategy whose agents search for themselves and need
        no gathered pages). Kept items only unless ``dropped`` (the items a filter left out, with the
        reason, for a verdict that lists them). The source is asked once per sample however many
        agents ask.
        """
        if not from_source:
            return [e for e in self.evidence if e.kept or dropped]
        if self._gathered is None:
            gathered: list[Evidence] = []
            if self.evidence_source is not None:
                found = await self.evidence_source.gather(sample, ledger=self.ledger)
                gathered = await self.evidence_policy.screen(found, sample, self.ledger)
            self._gathered = gathered
        items = [*self.evidence, *self._gathered]
        return items if dropped else [e for e in items if e.kept]

    def seed_for(self, *call_site: object) -> int:
        """The seed of one call site of this sample (``seed_for("seat", "agent_a")``): see :func:`derive_seed`."""
        return derive_seed(self.seed, *call_site)

    def prepare(self, sample: Sample) -> PreparedSample:
        """The sample's media checked and loaded under the run's limits: every strategy's first step."""
        from m3d_agents.media.images import prepare_sample

        return prepare_sample(sample, self.limits)

    def tool_setup(self, config: StrategyConfig) -> ToolSetup:
        """The per-tool backends and weights of this run: the configuration's ``tools:`` over the config file's.
        A tool's own backend is kept under ``--backend``, which changes the agents' backend only."""
        return resolve_tools(self.pool, config.tools)

    def backend_name(self, *preferred: str | None) -> str:
        """The backend a call should use: the run's override, else the first preference given, else the default."""
        return self.backend or next((p for p in preferred if p), None) or self.pool.default_backend

    def backend_for(self, config: StrategyConfig) -> tuple[str, Backend]:
        """The backend of a strategy's calls (the run's override, else the configuration's) with its name."""
        name = self.backend_name(config.backend)
        return name, self.pool.get(name)

    async def emit(self, turn: TranscriptTurn) -> None:
        """Stream a finished turn to ``on_turn``."""
        if self.on_turn is not None:
            result = self.on_turn(turn)
            if inspect.isawaitable(result):
                await result

    def verdict(
        self,
        sample: Sample,
        config: StrategyConfig,
        *,
        backend: str,
        label: str | None,
        abstain_reason: str = "",
        label_taxonomy: str | None = None,
        diagnostics: StrategyDiagnostics | None = None,
        **fields: Any,
    ) -> Verdict:
        """The Verdict with the fields every strategy shares filled in.

        ``label`` is in ``label_taxonomy`` (default: the sample's) and is carried over to the
        sample's taxonomy. None gives an abstention whose reason is ``abstain_reason``. ``diagnostics`` are
        the strategy's own model; a strategy without one (a plug-in's) gets untyped diagnostics that still
        carry the wall time.
        """
        taxonomy = get_taxonomy(sample.taxonomy)
        if label is not None and label_taxonomy not in (None, taxonomy.name):
            label = collapse_label(label, get_taxonomy(label_taxonomy or taxonomy.name), taxonomy)
        common: dict[str, Any] = {
            "sample_id": sample.id,
            "taxonomy": taxonomy.name,
            "config": config.name,
            "backend": backend,
            "accounting": self.ledger.accounting(),
            "diagnostics": (diagnostics or UntypedDiagnostics(source=config.strategy)).model_copy(
                update={"wall_time_s": round(time.perf_counter() - self.started, 3)}
            ),
            **fields,
        }
        rationale = fields.get("rationale")
        if isinstance(rationale, str) and rationale.strip() and self.ledger.is_recital(rationale):
            common["rationale_recites_prompt"] = True
        if label is None:
            return Verdict.abstain(reason=abstain_reason or "no answer", **common)
        if isinstance(common.get("confidence"), float):
            # Products and means of stated confidences come out as 0.9750000000000001; four places say all there is.
            common["confidence"] = round(common["confidence"], 4)
        return Verdict(label=label, **common)


class Strategy(Protocol):
    """How one sample is checked end to end; built from its configuration, run once per sample."""

    config_model: ClassVar[type[StrategyConfig]]

    def __init__(self, config: Any) -> None: ...

    async def run(self, sample: Sample, ctx: RunContext) -> Verdict: ...


C = TypeVar("C", bound=StrategyConfig)


class ConfiguredStrategy(Generic[C]):
    """What every built-in strategy starts from: its configuration, validated by ``config_model``, kept as ``config``."""

    config_model: ClassVar[type[StrategyConfig]]

    def __init__(self, config: C) -> None:
        self.config = config


STRATEGIES: Registry[type[Strategy]] = Registry("strategy", plugins=("debates.strategies.builtin",))
"""Every strategy by name; the built-in ones register when :mod:`debates.strategies.builtin` is imported (on the
first lookup, which only running a configuration needs)."""

CONFIG_MODELS: Registry[type[StrategyConfig]] = Registry("strategy", plugins=("debates.strategies.configs",))
"""Each built-in strategy's configuration model by the strategy's name, the same class as the strategy's
``config_model``. A configuration is read far more often than it is run (``m3d config`` lists every one,
``m3d seats`` reads a debate's seats), so these models live in modules that import no model client, tool
or AutoGen, and register when :mod:`debates.strategies.configs` is imported (on the first lookup). A
plug-in strategy registered with ``@strategy`` alone is found through its ``config_model``
(:func:`debates.config_loader.config_model_of`)."""

S = TypeVar("S")
M = TypeVar("M", bound=type[StrategyConfig])


def strategy(name: str, diagnostics: type[StrategyDiagnostics] | None = None) -> Callable[[S], S]:
    """Register a strategy class under ``name``; its ``config_model`` validates configurations that name it, and
    ``diagnostics`` (a :class:`StrategyDiagnostics` model whose ``strategy`` defaults to ``name``) types the
    diagnostics of its verdicts, in results files as in memory."""
    if diagnostics is not None:
        register_diagnostics(name, diagnostics)
    return STRATEGIES.register(name)


def configuration(name: str) -> Callable[[M], M]:
    """Register a configuration model as the strategy ``name``'s, to be found without importing the strategy."""
    return CONFIG_MODELS.register(name)
