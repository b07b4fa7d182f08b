"""What a verdict of T2Agent carries in its diagnostics: the search's course, per subtask, and the whole tree."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

from debates.strategies.t2agent.tree import Node


class NodeReport(BaseModel):
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

    @classmethod
    def of(cls, node: Node) -> "NodeReport":
        action = None
        if node.kind == "answer":
            action = f"Finish[{node.finish}]"
        elif node.verb is not None:
            action = f"{node.verb}[{node.argument or ''}]"
        return cls(
            id=node.id, kind=node.kind, subtask=node.subtask, depth=node.depth, visits=node.visits,
            value=round(node.value, 6), prior=node.prior, status=node.status if node.kind == "subtask" else None,
            thought=node.thought or None, action=action, observation=node.observation,
            trajectory_score=node.trajectory_score, answer=node.answer, confidence_score=node.confidence_score,
            reward=None if node.reward is None else round(node.reward, 6), error=node.error,
            children=[cls.of(child) for child in node.children],
        )


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
    uct: str
    settings: dict[str, Any]
    k: int = Field(description="K, the most iterations this search could run (settings.iterations, or one more than the subtasks)")
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
