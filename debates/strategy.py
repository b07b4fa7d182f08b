"""How one sample is checked end to end: the Strategy contract, the run context, and configurations.

A *strategy* turns a :class:`~m3d_agents.sample.Sample` into a :class:`~m3d_agents.verdict.Verdict`:
the group-chat debate (with its protocols), the single check, self-consistency, and the tree
search, fact-checking and video strategies. A *configuration* is a small YAML file that names its
strategy and holds that strategy's settings; ``strategy:`` defaults to ``debate`` when the file
names a ``protocol:``. Every run path (``m3d check``, ``m3d debate``, ``m3d evaluate``, the
notebooks, the web page) goes through :func:`run_sample`, which has no branch on a strategy's or a
configuration's name: adding a strategy is one module that registers itself and one YAML file.

The :class:`RunContext` carries what a run gives a strategy (backends, evidence sources, people in
seats, streaming callbacks, the seed) and assembles the Verdict fields that every strategy
shares, so a strategy only says what it decided and how.
"""

from __future__ import annotations

import inspect
import re
import time
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Awaitable, Callable, ClassVar, Mapping, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from m3d_agents.backends.metering import UsageLedger
from m3d_agents.errors import InputError
from m3d_agents.evidence import Evidence
from m3d_agents.labels import collapse_label, get_taxonomy
from m3d_agents.registry import Registry
from m3d_agents.safe_yaml import load_yaml
from m3d_agents.sample import InputLimits, Sample
from m3d_agents.verdict import TranscriptTurn, Verdict
from retrieval.config import RetrievalConfig

if TYPE_CHECKING:
    from m3d_agents.backends.factory import BackendPool
    from retrieval.interfaces import EvidenceSource, QueryAnswerer
    from retrieval.report import EvidenceLog

TurnCallback = Callable[[TranscriptTurn], "Awaitable[None] | None"]
"""Called with every finished turn of any strategy, as it finishes: what the CLI, notebooks and
the web page stream. May be a plain function or a coroutine function."""

MessageCallback = Callable[[Any, Any], "Awaitable[None] | None"]
"""Group-chat strategies only: called with every AutoGen message or event and the strategy's state."""


class StrategyConfig(BaseModel):
    """What every configuration has; each strategy's configuration model extends it."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    strategy: str
    retrieval: RetrievalConfig | None = Field(
        None,
        description="where the run's evidence comes from (providers, pages, summaries, leakage and language "
        "policy); None: no evidence unless the run asks for it (--retrieval live)",
    )


@dataclass
class RunContext:
    """What one run of one sample gives a strategy. Built fresh per sample: nothing carries over."""

    pool: BackendPool
    backend: str | None = None
    """Overrides the backend of every seat and call of the strategy."""
    limits: InputLimits | None = None
    seed: int = 0
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
    evidence_log: EvidenceLog | None = None
    """Collects what retrieval did for the sample; :func:`run_sample` puts its report on the verdict."""
    human_seats: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    """Seat name -> input function (sync or async; see :mod:`debates.chat.human_input`)."""
    on_turn: TurnCallback | None = None
    on_message: MessageCallback | None = None
    ledger: UsageLedger = field(default_factory=UsageLedger)
    started: float = field(default_factory=time.perf_counter)

    async def gather_evidence(self, sample: Sample) -> list[Evidence]:
        """The evidence a strategy may show its agents: what came with the sample plus what the
        evidence source gathers, kept items only (dropped ones stay in the evidence report)."""
        gathered = list(self.evidence)
        if self.evidence_source is not None:
            gathered += await self.evidence_source.gather(sample, ledger=self.ledger)
        return [e for e in gathered if e.kept]

    def backend_name(self, *preferred: str | None) -> str:
        """The backend a call should use: the run's override, else the first preference given, else the default."""
        return self.backend or next((p for p in preferred if p), None) or self.pool.default_backend

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
        diagnostics: Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> Verdict:
        """The Verdict with the fields every strategy shares filled in.

        ``label`` is in ``label_taxonomy`` (default: the sample's) and is carried over to the
        sample's taxonomy. None gives an abstention whose reason is ``abstain_reason``.
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
            "diagnostics": {**(diagnostics or {}), "wall_time_s": round(time.perf_counter() - self.started, 3)},
            **fields,
        }
        if label is None:
            return Verdict.abstain(reason=abstain_reason or "no answer", **common)
        return Verdict(label=label, **common)


class Strategy(Protocol):
    """How one sample is checked end to end; built from its configuration, run once per sample."""

    config_model: ClassVar[type[StrategyConfig]]

    def __init__(self, config: Any) -> None: ...

    async def run(self, sample: Sample, ctx: RunContext) -> Verdict: ...


STRATEGIES: Registry[type[Strategy]] = Registry("strategy")
"""Every strategy by name; the built-in ones register when :mod:`debates.strategies` is imported."""

S = TypeVar("S")


def strategy(name: str) -> Callable[[S], S]:
    """Register a strategy class under ``name``; its ``config_model`` validates configurations that name it."""
    return STRATEGIES.register(name)


# --- configurations -------------------------------------------------------------------------------


def builtin_config_names() -> list[str]:
    folder = resources.files("debates").joinpath("configs")
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


def strategy_of(data: Mapping[str, Any]) -> str:
    """The strategy a configuration names; ``debate`` when it names only a protocol."""
    named = data.get("strategy")
    if named is None and "protocol" in data:
        return "debate"
    if not isinstance(named, str) or not named:
        raise InputError("strategy", f"missing; name one of: {', '.join(STRATEGIES.names())}")
    return named


def parse_config(data: Any, origin: str = "config") -> StrategyConfig:
    """Validate a configuration's data with the model of the strategy it names."""
    if not isinstance(data, dict):
        raise InputError(origin, "a configuration is a mapping of settings (name, strategy, ...)")
    model = STRATEGIES.get(strategy_of(data)).config_model
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InputError.from_validation(exc, origin, default_field="config") from None


@lru_cache(maxsize=64)
def _parsed(text: str, origin: str) -> StrategyConfig:
    """Parsed once per distinct text: a batch run loads its configuration for every sample, and YAML
    parsing cost more CPU than a model call; keyed on the text, an edited file is read afresh."""
    return parse_config(load_yaml(text, origin), origin)


CONFIG_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def load_config(name_or_path: str | Path) -> StrategyConfig:
    """A built-in configuration by name (``async``, ``check`` ...) or a YAML file by path.

    The two are told apart by the suffix, never by looking: a name is only ever looked up among the
    built-in files, so ``../../elsewhere`` cannot reach a file outside them, and a path is only
    ever a ``.yaml`` or ``.yml`` file that exists.
    """
    text = str(name_or_path)
    path = Path(text)
    if path.suffix in (".yaml", ".yml"):
        if not path.exists():
            raise InputError("config", f"{text} does not exist")
        if not path.is_file():
            raise InputError("config", f"{text} is not a file")
        try:
            return _parsed(path.read_text(encoding="utf-8"), text).model_copy(deep=True)
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError("config", f"cannot read {text}: {getattr(exc, 'strerror', None) or exc}") from None
    if not CONFIG_NAME.fullmatch(text) or ".." in text:
        raise InputError(
            "config", f"{text!r} is neither a built-in configuration name nor a path to a .yaml file; "
            f"built in: {', '.join(builtin_config_names())}"
        )
    resource = resources.files("debates").joinpath("configs", f"{text}.yaml")
    if not resource.is_file():
        raise InputError("config", f"no configuration {text!r}; built in: {', '.join(builtin_config_names())}")
    return _parsed(resource.read_text(encoding="utf-8"), f"debates/configs/{text}.yaml").model_copy(deep=True)


def with_overrides(config: StrategyConfig, **changes: Any) -> StrategyConfig:
    """A copy of ``config`` with ``changes`` applied and validated like the YAML file itself, so an
    override from the command line cannot slip past a bound (``max_rounds`` at most 20 ...)."""
    unknown = [k for k in changes if k not in type(config).model_fields]
    if unknown:
        raise InputError(unknown[0], f"the {config.name} configuration ({config.strategy}) has no setting {unknown[0]!r}")
    return parse_config({**config.model_dump(), **changes}, f"{config.name} with {', '.join(changes)} overridden")


def available_configs() -> list[str]:
    """The built-in configurations, for ``--help`` texts and notebooks: a new YAML file appears here."""
    return builtin_config_names()


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
    """Run ``config`` (a built-in name, a YAML path, or a loaded configuration) on ``sample``.

    ``backend`` overrides the backend of every seat; ``options`` are further :class:`RunContext`
    fields (evidence, an evidence source, human seats, streaming callbacks ...).
    """
    loaded = config if isinstance(config, StrategyConfig) else load_config(config)
    ctx = RunContext(pool=pool, backend=backend, limits=limits, seed=seed, **options)
    try:
        verdict = await STRATEGIES.get(loaded.strategy)(loaded).run(sample, ctx)
    finally:
        report = ctx.evidence_log.report(sample.id) if ctx.evidence_log is not None else None
    return verdict.model_copy(update={"evidence_report": report}) if report is not None else verdict
