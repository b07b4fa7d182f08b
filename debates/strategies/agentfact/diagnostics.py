"""How AgentFact's workflow decided: its steps, plans, queries, the evidence pool and the explainer's answers."""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from m3d_agents.diagnostics import StrategyDiagnostics


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
    legacy_keys: ClassVar[frozenset[str]] = frozenset({'pool', 'setting', 'explainer_attempts'})
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

