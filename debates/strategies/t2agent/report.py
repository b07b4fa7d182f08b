"""A T2Agent search tree as its verdict's diagnostics record it (:class:`~m3d_agents.diagnostics.NodeReport`)."""

from __future__ import annotations

from debates.strategies.t2agent.tree import Node
from debates.strategies.t2agent.diagnostics import NodeReport


def node_report(node: Node) -> NodeReport:
    """``node`` and everything under it, rounded where floats would only add noise to a results file."""
    action = None
    if node.kind == "answer":
        action = f"Finish[{node.finish}]"
    elif node.verb is not None:
        action = f"{node.verb}[{node.argument or ''}]"
    return NodeReport(
        id=node.id, kind=node.kind, subtask=node.subtask, depth=node.depth, visits=node.visits,
        value=round(node.value, 6), prior=node.prior, status=node.status if node.kind == "subtask" else None,
        thought=node.thought or None, action=action, observation=node.observation,
        trajectory_score=node.trajectory_score, answer=node.answer, confidence_score=node.confidence_score,
        reward=None if node.reward is None else round(node.reward, 6), error=node.error,
        children=[node_report(child) for child in node.children],
    )
