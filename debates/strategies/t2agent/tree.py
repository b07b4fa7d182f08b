"""The search tree of T2Agent, model-free: nodes, the modified UCT (both forms), backup and subtask status.

Why a tree of its own and not a transcript: the search revisits, scores and prunes branches, so
every node must keep its visit count N, its value V and what produced it. Nothing here calls a
model or a tool, so every rule of the paper (eq. 3, Alg. 1's backup, pruning and early stop) is
checked on hand-built trees; :mod:`debates.strategies.t2agent.search` drives it, and the strategy
supplies the model calls.

Depths: a subtask node has depth 0, its first steps depth 1. Before a node's first visit its V
is its prior (subtask) or its trajectory score s_T (step and answer); after visits, the running
mean of the rewards backed up through it, so the first backup replaces the initial value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Iterator, Literal

NodeKind = Literal["root", "subtask", "step", "answer", "dead"]
Answer = Literal["fake", "real"]
SubtaskStatus = Literal["open", "pruned", "decided_fake"]
UctForm = Literal["eq3", "alg1"]

TIE_EPSILON = 1e-12
"""Two UCT values closer than this are a tie (floating-point noise must not break ties by accident)."""


@dataclass(eq=False)
class Node:
    """One node of the search; step and answer nodes hold the step that produced them."""

    id: int
    kind: NodeKind
    subtask: str | None
    depth: int
    parent: Node | None = field(default=None, repr=False)
    children: list[Node] = field(default_factory=list, repr=False)
    visits: int = 0
    value: float = 0.0
    prior: float | None = None
    thought: str = ""
    verb: str | None = None
    argument: str | None = None
    observation: str | None = None
    trajectory_score: float | None = None
    answer: Answer | None = None
    finish: str | None = None
    confidence_score: float | None = None
    reward: float | None = None
    evaluated_order: int | None = None
    """When this answer was first evaluated (0, 1, ...): ties between equally rewarded answers go to the latest."""
    status: SubtaskStatus = "open"
    """Subtask nodes only."""
    text: str = ""
    """What the model wrote for this step."""
    error: str | None = None
    """Dead nodes: why the step could not be read."""

    @property
    def terminal(self) -> bool:
        return self.kind in ("answer", "dead")

    @property
    def is_leaf(self) -> bool:
        return not self.children

    def path(self) -> list[Node]:
        """Root first, this node last."""
        nodes: list[Node] = []
        node: Node | None = self
        while node is not None:
            nodes.append(node)
            node = node.parent
        return nodes[::-1]

    def steps(self) -> list[Node]:
        """The step and answer nodes from the subtask down to this node (the trajectory)."""
        return [n for n in self.path() if n.kind in ("step", "answer", "dead")]

    def walk(self) -> Iterator[Node]:
        yield self
        for child in self.children:
            yield from child.walk()


def uct(child: Node, parent_visits: int, c: float, form: UctForm = "eq3") -> float:
    """The modified UCT of a child of a parent visited ``parent_visits`` times.

    ``eq3``: V / (N+1) + C·sqrt(ln(N_parent+1) / (N+1)), the paper's numbered formula.
    ``alg1``: V + C·sqrt(ln(N_parent+1) / (N+1)), the selection line of its Algorithm 1.
    The "+1" keeps an unvisited child finite; with an unvisited parent the exploration term is 0.
    """
    explore = c * math.sqrt(math.log(parent_visits + 1) / (child.visits + 1))
    exploit = child.value / (child.visits + 1) if form == "eq3" else child.value
    return exploit + explore


def select_child(parent: Node, c: float, form: UctForm = "eq3") -> Node | None:
    """The child of highest UCT; None when no child may be selected.

    Subtask children that are pruned or decided are never selected. A dead child (a step whose
    answer could not be read) is selected only when every child is dead: it holds nothing to
    explore and is worth 0, yet as an unvisited node it would outscore a visited sibling under
    eq. 3 (0 + 1.665 against r/2 + 1.177 on a subtask's second visit), so the one revisit a small
    K allows would be spent on it. The paper has no unreadable steps; this is our rule. Ties go to
    the higher prior (subtask level), then to the earlier child (config order for subtasks,
    creation order below).
    """
    candidates = [child for child in parent.children if child.kind != "subtask" or child.status == "open"]
    live = [child for child in candidates if child.kind != "dead"]
    candidates = live or candidates
    best: Node | None = None
    best_score = -math.inf
    for child in candidates:
        score = uct(child, parent.visits, c, form)
        if best is None or score > best_score + TIE_EPSILON:
            best, best_score = child, score
        elif abs(score - best_score) <= TIE_EPSILON and (child.prior or 0.0) > (best.prior or 0.0):
            best, best_score = child, score
    return best


def backpropagate(path: list[Node], reward: float) -> None:
    """Alg. 1's backup: every node on the path takes the running mean of the rewards through it.

    ``V ← (V·N + r)/(N+1); N ← N+1``. Siblings are untouched; the root's N counts iterations.
    """
    for node in path:
        node.value = (node.value * node.visits + reward) / (node.visits + 1)
        node.visits += 1


@dataclass
class SearchTree:
    """The root, one subtask node per forgery source (config order), and a counter for node ids."""

    root: Node
    _next_id: int = 1
    _evaluations: int = 0

    @classmethod
    def build(cls, subtasks: list[str], priors: list[float]) -> SearchTree:
        if len(subtasks) != len(priors):
            raise ValueError(f"{len(subtasks)} subtasks but {len(priors)} priors")
        root = Node(id=0, kind="root", subtask=None, depth=-1)
        tree = cls(root=root)
        for name, prior in zip(subtasks, priors):
            node = tree.add(root, "subtask", subtask=name)
            node.prior = prior
            node.value = prior
        return tree

    def add(self, parent: Node, kind: NodeKind, **fields: object) -> Node:
        subtask = fields.pop("subtask", parent.subtask)
        node = Node(id=self._next_id, kind=kind, subtask=subtask, depth=parent.depth + 1, parent=parent, **fields)  # type: ignore[arg-type]
        self._next_id += 1
        parent.children.append(node)
        return node

    def mark_evaluated(self, node: Node) -> None:
        node.evaluated_order = self._evaluations
        self._evaluations += 1

    @property
    def subtasks(self) -> list[Node]:
        return list(self.root.children)

    def subtask(self, name: str) -> Node:
        for node in self.root.children:
            if node.subtask == name:
                return node
        raise KeyError(name)

    def open_subtasks(self) -> list[Node]:
        return [n for n in self.root.children if n.status == "open"]

    @property
    def iterations(self) -> int:
        return self.root.visits

    @property
    def decided(self) -> Node | None:
        """The subtask that ended the search on a confident fake, if any."""
        return next((n for n in self.root.children if n.status == "decided_fake"), None)

    def answers(self, subtask: str) -> list[Node]:
        """Every evaluated answer node of a subtask, in evaluation order."""
        found = [n for n in self.subtask(subtask).walk() if n.kind == "answer" and n.evaluated_order is not None]
        return sorted(found, key=lambda n: n.evaluated_order or 0)

    def size(self) -> int:
        return sum(1 for _ in self.root.walk())


def update_status(subtask: Node, leaf: Node, threshold: float, on: Literal["confidence", "reward"] = "confidence",
                  prune: bool = True, early_stop: bool = True) -> SubtaskStatus:
    """After an iteration in ``subtask`` that ended at ``leaf``: prune a confident real, stop on a confident fake.

    The test reads the leaf's confidence score S_C (or its reward, ``on="reward"``) against
    ``threshold`` with ``>=``. An answer whose S_C is missing never prunes or stops.
    """
    if leaf.kind != "answer" or leaf.confidence_score is None or subtask.status != "open":
        return subtask.status
    measured = leaf.confidence_score if on == "confidence" else (leaf.reward or 0.0)
    if measured >= threshold:
        if leaf.answer == "real" and prune:
            subtask.status = "pruned"
        elif leaf.answer == "fake" and early_stop:
            subtask.status = "decided_fake"
    return subtask.status
