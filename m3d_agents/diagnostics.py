"""How a verdict was reached, per strategy: one typed model each, a union on the strategy's name.

Training export, reports, the notebooks and the web page read these fields; a field read by key
with a default would pass silently over a strategy that never writes it, which is how a debate's
verdict once looked like a well-formed FactGuard trajectory. The models live here, beside
:class:`~m3d_agents.verdict.Verdict`, because the verdict holds them and the strategies sit above.

Every model shares the fields of :class:`StrategyDiagnostics` (wall time, stop reason, what
decided). A results file written before the diagnostics were typed holds plain dictionaries
without a ``strategy`` key; :func:`read_diagnostics` recognises each strategy's old dictionary by
the keys its writer always wrote and reads it into today's model, and keeps what it cannot read
that way as :class:`UntypedDiagnostics`, so an old run folder still loads, reports and reviews.
A plug-in strategy's own diagnostics model (any :class:`StrategyDiagnostics` whose ``strategy``
is not one of these) is kept the same way.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import AliasChoices, BaseModel, BeforeValidator, ConfigDict, Field, TypeAdapter, ValidationError


class StrategyDiagnostics(BaseModel):
    """What every strategy's diagnostics say."""

    model_config = ConfigDict(extra="forbid")

    strategy: str = Field(description="the strategy that wrote these diagnostics")
    wall_time_s: float = Field(0.0, ge=0.0, description="seconds from the start of the sample to its verdict")
    stop_reason: str = Field("", description="why the strategy stopped (consensus, a turn limit, a confirmed forgery ...)")
    decided_by: str | None = Field(
        None, description="what gave the label (consensus, majority, judge, fusion ...); None: no decision rule ran or none decided"
    )
    items_lost: list[str] = Field(
        default_factory=list, description="pages, images and videos a parser lost (it crashed, timed out or passed its "
        "memory limit), one line each naming the item and why; the sample went on without them"
    )


class CheckDiagnostics(StrategyDiagnostics):
    strategy: Literal["check"] = "check"
    attempts: int = Field(ge=0, description="model calls the single check made, re-asks included")


class SelfConsistencyDiagnostics(StrategyDiagnostics):
    strategy: Literal["self-consistency"] = "self-consistency"
    votes: dict[str, int] = Field(description="readable checks per label")
    readable: int = Field(ge=0, description="checks whose answer could be read")
    n: int = Field(ge=1, description="checks asked")


class AnswerTaxonomy(BaseModel):
    model_config = ConfigDict(extra="forbid")

    taxonomy: str = Field(description="the label set the seats answered in")
    label: str | None = Field(description="the decided label in that set, before it is carried over to the sample's")


class CandidateScore(BaseModel):
    model_config = ConfigDict(extra="forbid")

    candidate: int = Field(description="the candidate's index among the N")
    u: float | None = Field(description="its reward")
    q: float | None = Field(description="its critique score, when a critic read it")
    s: float | None = Field(description="u + q, the score it is ranked by; None when a part is missing")
    errors: list[str] = Field(default_factory=list, description="why a part of its score is missing")


class SavedCalls(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reward: int = Field(0, ge=0, description="reward calls the early stop or a unanimous turn saved")
    critique: int = Field(0, ge=0, description="critique calls the early stop or a unanimous turn saved")
    total: int | None = Field(None, ge=0, description="both together (per sample only)")


class BestOfNTurn(BaseModel):
    """What one best-of-N turn did."""

    model_config = ConfigDict(extra="forbid")

    speaker: str
    round: int
    n: int = Field(description="candidates sampled")
    readable_candidates: int
    m_star: int = Field(description="m*: where the top-m gap rule (or lazy scoring) stopped")
    chosen: int | None = Field(description="the kept candidate's index; None when none was readable")
    scores: list[CandidateScore] = Field(default_factory=list)
    saved_calls: SavedCalls = Field(default_factory=SavedCalls)
    reward: str = Field(description="the reward that scored the candidates")
    critic: str | None = Field(description="the critic that read them; None: s = u")
    note: str = ""


class PlannerDecision(BaseModel):
    model_config = ConfigDict(extra="forbid")

    level: int = Field(description="0: a single pass per turn; 1: best-of-N")
    error: str | None = Field(None, description="why the plan could not be read (best-of-N was used)")


class SelectionDiagnostics(BaseModel):
    """What the seats' turn policies did: the planner's decision and every best-of-N turn."""

    model_config = ConfigDict(extra="forbid")

    escalated: bool = Field(False, description="some turn ran best-of-N")
    planner: PlannerDecision | None = Field(None, description="the planner's decision; None: no seat plans")
    best_of_n_turns: list[BestOfNTurn] = Field(default_factory=list)
    single_pass_turns: int = Field(0, ge=0, description="turns a planned seat took in a single pass")
    m_star: list[int] = Field(default_factory=list, description="m* of each best-of-N turn, in order")
    saved_calls: SavedCalls = Field(default_factory=SavedCalls)


class DebateDiagnostics(StrategyDiagnostics):
    strategy: Literal["debate"] = "debate"
    rounds: int = Field(ge=0, description="the highest round a deciding seat spoke in")
    consensus_round: int | None = Field(None, description="the round after which every decider first agreed; None: never")
    answer_changes: dict[str, int] = Field(default_factory=dict, description="deciding seat -> times it changed its label")
    first_round_majority: str | None = None
    overturned_first_round_majority: bool = False
    queries_answered: int = Field(0, ge=0, description="debaters' queries the retrieval desk answered")
    answer: AnswerTaxonomy
    selection: SelectionDiagnostics = Field(default_factory=SelectionDiagnostics)
    planner_escalated: bool | None = Field(
        None, validation_alias=AliasChoices("planner_escalated", "escalated"),
        description="the planner sent this sample to best-of-N (an unreadable plan does too); None: no planner was asked. "
        "Read from 'escalated' in rows written before the diagnostics were typed",
    )
    image_descriptions: list[str] = Field(
        default_factory=list, description="what text-only seats were told about the image (forensic and OCR findings)"
    )


class NodeReport(BaseModel):
    """One node of T2Agent's search tree, with its children."""

    id: int
    kind: str
    subtask: str | None
    depth: int
    visits: int
    value: float
    prior: float | None = None
    status: str | None = None
    thought: str | None = None
    action: str | None = None
    observation: str | None = None
    trajectory_score: float | None = None
    answer: str | None = None
    confidence_score: float | None = None
    reward: float | None = None
    error: str | None = None
    children: list["NodeReport"] = Field(default_factory=list)


class SubtaskReport(BaseModel):
    name: str
    title: str
    status: str
    prior: float | None
    visits: int
    value: float
    answers: int = Field(description="evaluated answers in this subtask")
    chosen_answer: str | None = Field(None, description="the Finish answer that entered the decision")
    confidence_score: float | None = None
    reward: float | None = None
    p_fake: float | None = None


class PriorReport(BaseModel):
    source: str
    values: dict[str, float]
    error: str | None = None


class ToolReport(BaseModel):
    runs: dict[str, int] = Field(default_factory=dict, description="tool executions by verb")
    cache_hits: dict[str, int] = Field(default_factory=dict)
    refused: dict[str, int] = Field(default_factory=dict, description="actions outside a subtask's tools, never run")
    errors: list[str] = Field(default_factory=list)


class SearchReport(BaseModel):
    """T2Agent's search, whole: its settings, priors, course, per-subtask outcome and tree."""

    uct: str
    settings: dict[str, Any] = Field(description="the configuration's search settings as run (a record, not read back)")
    k: int | None = Field(
        None, description="K, the most iterations this search could run (settings.iterations, or one more than the "
        "subtasks); None in rows written before it was recorded"
    )
    priors: PriorReport
    iterations: int
    revisited: list[str] = Field(
        default_factory=list, description="subtasks selected in more than one iteration, in config order"
    )
    stop_reason: str
    pruned: list[str]
    early_stop: str | None
    decided_by: str
    p_real: float | None
    p_fake: dict[str, float]
    tree_size: int
    dead_steps: int
    missing_scores: dict[str, int]
    reused_scores: int
    unscored_steps: int
    """Steps left without S_T because they had no sibling to be ranked against (``trajectory_scores: ranked_only``)."""
    tools: ToolReport
    subtasks: list[SubtaskReport]
    path_per_iteration: list[list[int]]
    tree: NodeReport


class T2AgentDiagnostics(StrategyDiagnostics):
    strategy: Literal["t2agent"] = "t2agent"
    iterations: int = Field(ge=0, description="search iterations run")
    revisited: bool = Field(False, description="the search selected some subtask in more than one iteration")
    search: SearchReport


class PoolItem(BaseModel):
    """One evidence item AgentFact retrieved, as its screener left it."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(description="the id the agents saw (E3)")
    evidence_id: str
    kept: bool
    useful: bool
    reliability: str
    source: str
    reason: str | None = None


class AgentFactDiagnostics(StrategyDiagnostics):
    strategy: Literal["agentfact"] = "agentfact"
    setting: str = Field(description="closed_book, evidence_bounded or open_web")
    steps: int = Field(ge=0, description="the turns that count towards the step limit (the configuration's step_turns)")
    plans: int = Field(ge=0, description="plans made, replans included")
    queries: list[str] = Field(default_factory=list, description="search queries run")
    leakage: dict[str, int] = Field(default_factory=dict, description="items the leakage rules dropped, by rule")
    dropped_citations: dict[str, int] = Field(default_factory=dict, description="role -> cited ids that named nothing shown")
    label_2class_model: str | None = Field(None, description="the explainer's own two-class answer")
    label_2class_disagrees: bool = Field(False, description="it differs from the two-class label derived from its three-class one")
    explainer_attempts: int = Field(0, ge=0)
    pool: list[PoolItem] = Field(default_factory=list)
    errors: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list, description="answers kept with fields cut to their length bounds, and where")
    unavailable: dict[str, str] = Field(
        default_factory=dict, description="what the paper's method does that this run could not (image matching on a "
        "text-only backend, a detector without weights ...), and why"
    )
    unrelated_images: list[str] = Field(default_factory=list, description="pages whose image the image matching found unrelated, dropped")
    citations_all_answers: int = Field(0, ge=0, description="ids cited by every answer the explainer gave, retries included")
    citations_unknown_all_answers: int = Field(0, ge=0, description="of those, ids that named nothing the explainer was shown")


class RecordedToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any]


class AgentTurnRecord(BaseModel):
    """One FactGuard agent turn as it was read."""

    model_config = ConfigDict(extra="forbid")

    attempts: int = Field(ge=0, description="asks of the model for this turn, re-asks included")
    error: str | None = Field(None, description="why the turn could not be read, after the re-asks")
    tool_calls: list[RecordedToolCall] = Field(default_factory=list)
    answer: str | None = None
    lenient: list[str] = Field(default_factory=list, description="what a strict reading refused and inference tolerated")


class FactGuardDiagnostics(StrategyDiagnostics):
    strategy: Literal["factguard"] = "factguard"
    turns: int = Field(ge=0, description="agent turns taken")
    tool_calls: dict[str, int] = Field(default_factory=dict, description="tool calls requested, by tool")
    used_tools: bool = Field(False, description="the verifier asked for at least one tool call")
    tool_calls_answered: int | None = Field(
        None, ge=0, description="tool calls that ran and answered: not refused, unavailable or failed (none in rows from before it was counted)")
    tool_refusals: dict[str, int] = Field(default_factory=dict, description="calls refused (over budget, unknown), by tool")
    tool_stats: dict[str, int] = Field(default_factory=dict)
    video_seen: bool = Field(False, description="frames of the video were shown or described")
    format_ok: bool = Field(False, description="every turn was well formed at its first attempt (the SFT rule filter)")
    agent_turns: list[AgentTurnRecord] = Field(default_factory=list)
    teacher_hint: str = Field("", description="the gold hint a teacher run was given (removed from exported SFT data)")

    @property
    def tool_answered(self) -> bool:
        """Whether a tool call ran and answered, what the tool reward pays for; a row written before
        answered calls were counted falls back to whether any call was asked for."""
        return self.used_tools if self.tool_calls_answered is None else self.tool_calls_answered > 0


class UntypedDiagnostics(StrategyDiagnostics):
    """Diagnostics no model here reads: an old results row that does not fit its strategy's model
    today, or a plug-in strategy's own. ``source`` names the strategy where it is known."""

    model_config = ConfigDict(extra="forbid")

    strategy: Literal["untyped"] = "untyped"
    source: str = Field("unknown", description="the strategy that wrote them, where it is known")
    data: dict[str, Any] = Field(default_factory=dict, description="the diagnostics as written")


TYPED: dict[str, type[StrategyDiagnostics]] = {
    model.model_fields["strategy"].default: model
    for model in (CheckDiagnostics, SelfConsistencyDiagnostics, DebateDiagnostics, T2AgentDiagnostics,
                  AgentFactDiagnostics, FactGuardDiagnostics, UntypedDiagnostics)
}

LEGACY_SIGNATURES: tuple[tuple[str, frozenset[str]], ...] = (
    ("t2agent", frozenset({"search", "iterations"})),
    ("factguard", frozenset({"tool_calls", "format_ok", "agent_turns"})),
    ("agentfact", frozenset({"pool", "setting", "explainer_attempts"})),
    ("self-consistency", frozenset({"votes", "readable", "n"})),
    ("debate", frozenset({"answer", "rounds", "answer_changes"})),
    ("check", frozenset({"attempts"})),
)
"""The keys each strategy's writer always wrote before diagnostics were typed, most specific first."""

COMMON = ("wall_time_s", "stop_reason", "decided_by")


def legacy_strategy(data: dict[str, Any]) -> str | None:
    """The strategy whose old writer wrote ``data`` (a dictionary without ``strategy``), if any did."""
    return next((name for name, keys in LEGACY_SIGNATURES if keys <= data.keys()), None)


def untyped(data: dict[str, Any], source: str | None) -> dict[str, Any]:
    common = {k: data[k] for k in COMMON if k in data}
    try:
        StrategyDiagnostics.model_validate({"strategy": "untyped", **common})
    except ValidationError:
        common = {}
    return {"strategy": "untyped", "source": source or "unknown", "data": data, **common}


def read_diagnostics(value: Any) -> Any:
    """Today's diagnostics as they are; an old dictionary as its strategy's model, else untyped; a
    plug-in's model as untyped. Runs before the union is validated."""
    if isinstance(value, StrategyDiagnostics):
        own = TYPED.get(value.strategy)
        if own is not None and isinstance(value, own):
            return value
        value = {**value.model_dump(mode="json"), "strategy": value.strategy}
    if not isinstance(value, dict):
        return value
    if "strategy" in value:
        if value["strategy"] in TYPED:
            return value
        rest = {k: v for k, v in value.items() if k != "strategy"}
        return untyped(rest, str(value["strategy"]))
    strategy = legacy_strategy(value)
    if strategy is not None:
        candidate = {**value, "strategy": strategy}
        try:
            return TYPED[strategy].model_validate(candidate)
        except ValidationError:
            pass
    return untyped(value, strategy)


Diagnostics = Annotated[
    Union[CheckDiagnostics, SelfConsistencyDiagnostics, DebateDiagnostics, T2AgentDiagnostics, AgentFactDiagnostics,
          FactGuardDiagnostics, UntypedDiagnostics],
    Field(discriminator="strategy"),
    BeforeValidator(read_diagnostics),
]
"""A verdict's diagnostics: one model per strategy, told apart by ``strategy``."""

DIAGNOSTICS: TypeAdapter[Diagnostics] = TypeAdapter(Diagnostics)
"""Validates diagnostics outside a verdict (a results row's, a trajectory's)."""
