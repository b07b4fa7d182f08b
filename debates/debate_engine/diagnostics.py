"""How a debate was reached: the debate strategy's diagnostics, and what the seats' turn policies did.

Written by the debate state (:meth:`debates.debate_engine.state.DebateState.diagnostics`) and the turn
policies' shared state (:mod:`debates.debate_engine.turn_state`); registered with the ``debate`` strategy.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import AliasChoices, BaseModel, ConfigDict, Field

from m3d_agents.diagnostics import StrategyDiagnostics


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
    legacy_keys: ClassVar[frozenset[str]] = frozenset({'answer', 'rounds', 'answer_changes'})
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

