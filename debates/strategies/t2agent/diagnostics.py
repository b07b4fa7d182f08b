"""How T2Agent's tree search decided: its search, whole (settings, priors, course, subtasks, tree)."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, Field

from m3d_agents.diagnostics import StrategyDiagnostics


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
    legacy_keys: ClassVar[frozenset[str]] = frozenset({'search', 'iterations'})
    iterations: int = Field(ge=0, description="search iterations run")
    revisited: bool = Field(False, description="the search selected some subtask in more than one iteration")
    search: SearchReport

