"""One search over a post's subtasks (Alg. 1), with the model calls left to a :class:`Rollout`.

Each iteration picks the open subtask of highest UCT, descends by UCT (expanding a leaf into n
children on the way) until it reaches an answer, a dead step or the depth limit, evaluates that
leaf (the reward of a new answer needs one S_C call; a revisited answer reuses its reward; a dead
step is worth 0), backs the reward up the path, and then prunes the subtask on a confident real
answer or stops the search on a confident fake one. A non-decisive answer joins the subtask's
failure memory. The loop holds no model and no I/O, so tests drive it with plain functions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Awaitable, Callable, Protocol

from debates.strategies.t2agent.config import SearchSettings
from debates.strategies.t2agent.scoring import reward as dual_reward
from debates.strategies.t2agent.tree import Node, SearchTree, SubtaskStatus, backpropagate, select_child, update_status


class Rollout(Protocol):
    """The model side of the search."""

    async def expand(self, node: Node, tree: SearchTree, iteration: int) -> None:
        """Give the leaf ``node`` its children (n of them; an unreadable step becomes a dead child),
        each with its trajectory score set and ``value`` equal to it."""

    async def confidence(self, leaf: Node, tree: SearchTree, iteration: int) -> float | None:
        """S_C of a new answer node; None when the score could not be read."""


@dataclass
class Iteration:
    number: int
    subtask: str
    path: list[int]
    leaf: Node
    reward: float
    reused: bool
    status: SubtaskStatus


@dataclass
class SearchOutcome:
    stop_reason: str
    iterations: list[Iteration] = field(default_factory=list)
    deciding: Node | None = None
    """The answer that ended the search early (a confident fake), if one did."""


@dataclass
class Memory:
    """Failed trajectories per subtask, for the step prompts of later expansions in the same subtask."""

    by_subtask: dict[str, list[Node]] = field(default_factory=dict)

    def add(self, leaf: Node) -> None:
        self.by_subtask.setdefault(leaf.subtask or "", []).append(leaf)

    def latest(self, subtask: str, count: int) -> list[Node]:
        return self.by_subtask.get(subtask, [])[-count:] if count > 0 else []


def stop_reason(tree: SearchTree, settings: SearchSettings) -> str | None:
    """Why the search must stop before the next iteration, or None to go on."""
    decided = tree.decided
    if decided is not None:
        return f"early stop: the {decided.subtask} subtask answered fake with high confidence"
    if not tree.open_subtasks():
        return "every subtask confirmed real"
    k = settings.k(len(tree.subtasks))
    if tree.iterations >= k:
        return f"K iterations spent (K = {k})"
    return None


async def evaluate(leaf: Node, tree: SearchTree, rollout: Rollout, settings: SearchSettings, iteration: int) -> tuple[float, bool]:
    """The leaf's reward and whether it was reused from an earlier visit."""
    if leaf.kind == "answer":
        if leaf.reward is not None:
            return leaf.reward, True
        leaf.confidence_score = await rollout.confidence(leaf, tree, iteration)
        leaf.reward = dual_reward(settings.alpha, leaf.trajectory_score, leaf.confidence_score)
        tree.mark_evaluated(leaf)
        return leaf.reward, False
    if leaf.kind == "dead":
        leaf.reward = 0.0
        return 0.0, leaf.visits > 0
    return leaf.trajectory_score or 0.0, False


async def iterate(
    tree: SearchTree, rollout: Rollout, settings: SearchSettings, memory: Memory, number: int
) -> Iteration:
    subtask = select_child(tree.root, settings.exploration, settings.uct)
    if subtask is None:
        raise RuntimeError("no open subtask to search")
    path = [tree.root, subtask]
    node = subtask
    while not node.terminal and node.depth < settings.depth:
        if node.is_leaf:
            await rollout.expand(node, tree, number)
            if node.is_leaf:
                raise RuntimeError(f"expanding node {node.id} gave it no children")
        chosen = select_child(node, settings.exploration, settings.uct)
        assert chosen is not None
        node = chosen
        path.append(node)
    value, reused = await evaluate(node, tree, rollout, settings, number)
    backpropagate(path, value)
    status = update_status(subtask, node, settings.threshold, settings.threshold_on, settings.prune, settings.early_stop)
    if node.kind == "answer" and not reused and status == "open":
        memory.add(node)
    return Iteration(number, subtask.subtask or "", [n.id for n in path], node, value, reused, status)


async def run_search(
    tree: SearchTree,
    rollout: Rollout,
    settings: SearchSettings,
    memory: Memory | None = None,
    on_iteration: Callable[[Iteration], Awaitable[None]] | None = None,
) -> SearchOutcome:
    """Iterate until an early stop, every subtask pruned, or K iterations."""
    memory = memory if memory is not None else Memory()
    outcome = SearchOutcome(stop_reason="")
    while (reason := stop_reason(tree, settings)) is None:
        done = await iterate(tree, rollout, settings, memory, tree.iterations + 1)
        outcome.iterations.append(done)
        if done.status == "decided_fake":
            outcome.deciding = done.leaf
        if on_iteration is not None:
            await on_iteration(done)
    outcome.stop_reason = reason
    return outcome
