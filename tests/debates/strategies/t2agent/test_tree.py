"""The search core without any model: UCT in both forms, selection rules, backup, status, the loop."""

from __future__ import annotations

import pytest

from debates.strategies.t2agent.config import SearchSettings
from debates.strategies.t2agent.search import Memory, run_search
from debates.strategies.t2agent.tree import Node, SearchTree, backpropagate, select_child, uct, update_status

PRIORS = {"text": 0.6, "image": 0.1, "cross_modal": 0.3}


def tree_with_priors() -> SearchTree:
    return SearchTree.build(list(PRIORS), list(PRIORS.values()))


def after_one_text_visit(reward: float) -> SearchTree:
    tree = tree_with_priors()
    text = tree.subtask("text")
    backpropagate([tree.root, text], reward)
    return tree


def scores(tree: SearchTree, form: str) -> dict[str, float]:
    return {n.subtask or "": uct(n, tree.root.visits, 2.0, form) for n in tree.subtasks}  # type: ignore[arg-type]


def test_an_unvisited_root_ranks_subtasks_by_prior_in_both_forms() -> None:
    tree = tree_with_priors()
    for form in ("eq3", "alg1"):
        assert scores(tree, form) == pytest.approx(PRIORS, abs=1e-12)
        assert select_child(tree.root, 2.0, form).subtask == "text"  # type: ignore[arg-type, union-attr]


def test_uct_values_match_the_worked_numbers() -> None:
    tree = after_one_text_visit(0.5)
    assert scores(tree, "eq3") == pytest.approx({"text": 1.427410, "image": 1.765109, "cross_modal": 1.965109}, abs=1e-6)
    assert scores(tree, "alg1")["text"] == pytest.approx(1.677410, abs=1e-6)
    assert select_child(tree.root, 2.0, "eq3").subtask == "cross_modal"  # type: ignore[union-attr]
    assert select_child(tree.root, 2.0, "alg1").subtask == "cross_modal"  # type: ignore[union-attr]


def test_the_two_forms_disagree_when_the_visited_subtask_scored_high() -> None:
    tree = after_one_text_visit(0.9)
    assert scores(tree, "eq3")["text"] == pytest.approx(1.627410, abs=1e-6)
    assert scores(tree, "alg1")["text"] == pytest.approx(2.077410, abs=1e-6)
    assert select_child(tree.root, 2.0, "eq3").subtask == "cross_modal"  # type: ignore[union-attr]
    assert select_child(tree.root, 2.0, "alg1").subtask == "text"  # type: ignore[union-attr]


def test_inside_a_subtask_the_fresh_sibling_wins_on_the_second_visit() -> None:
    tree = tree_with_priors()
    text = tree.subtask("text")
    c1 = tree.add(text, "step", trajectory_score=0.6, value=0.6)
    c2 = tree.add(text, "step", trajectory_score=0.6, value=0.6)
    assert select_child(text, 2.0, "eq3") is c1, "unvisited parent: no exploration, the first of equal s_T"
    backpropagate([tree.root, text, c1], 0.6)
    assert uct(c1, text.visits, 2.0, "eq3") == pytest.approx(1.477410, abs=1e-6)
    assert uct(c2, text.visits, 2.0, "eq3") == pytest.approx(2.265109, abs=1e-6)
    assert select_child(text, 2.0, "eq3") is c2


def test_a_revisit_goes_to_the_visited_answer_not_to_an_unreadable_sibling() -> None:
    """An unvisited dead step would outscore the visited answer under eq. 3 (1.665 against r/2 + 1.177) and earn 0."""
    tree = tree_with_priors()
    text = tree.subtask("text")
    answer = tree.add(text, "answer", trajectory_score=0.7, value=0.7, answer="real")
    dead = tree.add(text, "dead", value=0.0, error="unreadable")
    backpropagate([tree.root, text, answer], 0.5)
    assert uct(dead, text.visits, 2.0, "eq3") > uct(answer, text.visits, 2.0, "eq3"), "the trap the rule avoids"
    assert select_child(text, 2.0, "eq3") is answer and select_child(text, 2.0, "alg1") is answer
    answer.kind = "dead"
    assert select_child(text, 2.0, "eq3") is dead, "with every child dead, a dead one is still chosen (worth 0)"


def test_pruned_and_decided_subtasks_are_never_selected() -> None:
    tree = tree_with_priors()
    tree.subtask("text").status = "pruned"
    assert select_child(tree.root, 2.0).subtask == "cross_modal"  # type: ignore[union-attr]
    tree.subtask("cross_modal").status = "decided_fake"
    assert select_child(tree.root, 2.0).subtask == "image"  # type: ignore[union-attr]
    tree.subtask("image").status = "pruned"
    assert select_child(tree.root, 2.0) is None


def test_ties_go_to_the_higher_prior_then_to_config_order() -> None:
    tree = SearchTree.build(["a", "b", "c"], [0.4, 0.4, 0.4])
    assert select_child(tree.root, 2.0).subtask == "a"  # type: ignore[union-attr]
    tree = SearchTree.build(["a", "b"], [0.3, 0.5])
    for node in tree.subtasks:
        node.value = 0.5
    assert select_child(tree.root, 2.0).subtask == "b"  # type: ignore[union-attr]


def test_backup_updates_the_path_with_running_means_and_leaves_siblings_alone() -> None:
    tree = tree_with_priors()
    root, text = tree.root, tree.subtask("text")
    root.visits, root.value, text.visits, text.value = 1, 0.5, 1, 0.5
    step = tree.add(text, "step", trajectory_score=0.7, value=0.7)
    sibling = tree.add(text, "step", trajectory_score=0.4, value=0.4)
    answer = tree.add(step, "answer", trajectory_score=0.8, value=0.8, finish="TEXT SUPPORT", answer="real")
    backpropagate([root, text, step, answer], 0.6)
    assert [(n.visits, round(n.value, 10)) for n in (answer, step, text, root)] == [(1, 0.6), (1, 0.6), (2, 0.55), (2, 0.55)]
    assert (sibling.visits, sibling.value) == (0, 0.4)
    assert tree.subtask("image").visits == 0


def test_status_prunes_a_confident_real_and_stops_on_a_confident_fake() -> None:
    tree = tree_with_priors()
    text, cross = tree.subtask("text"), tree.subtask("cross_modal")
    weak = Node(id=90, kind="answer", subtask="text", depth=1, answer="real", confidence_score=0.7, reward=0.9)
    assert update_status(text, weak, 0.8) == "open"
    assert update_status(text, weak, 0.8, on="reward") == "pruned"
    fake = Node(id=91, kind="answer", subtask="cross_modal", depth=1, answer="fake", confidence_score=0.8, reward=0.4)
    assert update_status(cross, fake, 0.8) == "decided_fake"
    missing = Node(id=92, kind="answer", subtask="image", depth=1, answer="fake", confidence_score=None, reward=0.5)
    assert update_status(tree.subtask("image"), missing, 0.0) == "open"


class TableRollout:
    """A model-free rollout: children and S_C from tables, calls counted."""

    def __init__(self, children: dict[str, list[dict[str, object]]], confidence: dict[str, float | None]) -> None:
        self.children = children
        self.confidence_of = confidence
        self.expanded: list[int] = []
        self.confidence_calls = 0

    async def expand(self, node: Node, tree: SearchTree, iteration: int) -> None:
        self.expanded.append(node.id)
        key = f"{node.subtask}@{node.depth + 1}"
        for spec in self.children[key]:
            fields = dict(spec)
            kind = str(fields.pop("kind"))
            child = tree.add(node, kind, **fields)  # type: ignore[arg-type]
            child.value = child.trajectory_score or 0.0

    async def confidence(self, leaf: Node, tree: SearchTree, iteration: int) -> float | None:
        self.confidence_calls += 1
        return self.confidence_of[f"{leaf.subtask}:{leaf.finish}"]


def answer(finish: str, verdict: str, s_t: float) -> dict[str, object]:
    return {"kind": "answer", "finish": finish, "answer": verdict, "trajectory_score": s_t}


async def test_the_loop_prunes_then_stops_early_as_in_the_worked_scenario() -> None:
    rollout = TableRollout(
        {
            "text@1": [{"kind": "step", "verb": "Wikipedia", "argument": "A", "trajectory_score": 0.7},
                       {"kind": "step", "verb": "Wikipedia", "argument": "B", "trajectory_score": 0.6}],
            "text@2": [answer("TEXT SUPPORT", "real", 0.8), answer("TEXT SUPPORT", "real", 0.8)],
            "cross_modal@1": [answer("MISMATCH", "fake", 0.6), answer("MATCH", "real", 0.5)],
        },
        {"text:TEXT SUPPORT": 0.8, "cross_modal:MISMATCH": 0.8},
    )
    tree = tree_with_priors()
    outcome = await run_search(tree, rollout, SearchSettings(iterations=3))
    assert [i.subtask for i in outcome.iterations] == ["text", "cross_modal"]
    assert outcome.iterations[0].reward == pytest.approx(0.8)
    assert tree.subtask("text").status == "pruned" and tree.subtask("cross_modal").status == "decided_fake"
    assert outcome.stop_reason.startswith("early stop") and outcome.deciding is not None
    assert outcome.deciding.finish == "MISMATCH" and tree.iterations == 2


async def test_revisiting_an_evaluated_answer_makes_no_call_and_backs_up_its_reward() -> None:
    rollout = TableRollout({"text@1": [answer("TEXT SUPPORT", "real", 0.9)]}, {"text:TEXT SUPPORT": 0.5})
    tree = SearchTree.build(["text"], [1.0])
    outcome = await run_search(tree, rollout, SearchSettings(iterations=3))
    assert rollout.confidence_calls == 1 and rollout.expanded == [tree.subtask("text").id]
    assert [i.reused for i in outcome.iterations] == [False, True, True]
    assert [i.reward for i in outcome.iterations] == pytest.approx([0.7, 0.7, 0.7])
    leaf = tree.subtask("text").children[0]
    assert leaf.visits == 3 and leaf.value == pytest.approx(0.7)
    assert outcome.stop_reason == "K iterations spent (K = 3)"


async def test_every_subtask_pruned_stops_the_search_and_memory_keeps_only_indecisive_answers() -> None:
    rollout = TableRollout(
        {"a@1": [answer("A OK", "real", 0.5)], "a@2": [answer("A OK", "real", 0.5)], "b@1": [answer("B OK", "real", 0.5)]},
        {"a:A OK": 0.9, "b:B OK": 0.6},
    )
    tree = SearchTree.build(["a", "b"], [0.2, 0.9])
    memory = Memory()
    outcome = await run_search(tree, rollout, SearchSettings(iterations=5), memory)
    assert tree.subtask("a").status == "pruned"
    assert [n.finish for n in memory.latest("b", 2)] == ["B OK"] and memory.latest("a", 2) == []
    assert outcome.stop_reason == "K iterations spent (K = 5)"
    tree = SearchTree.build(["a"], [0.5])
    outcome = await run_search(tree, TableRollout({"a@1": [answer("A OK", "real", 0.5)]}, {"a:A OK": 0.95}),
                               SearchSettings(iterations=5))
    assert outcome.stop_reason == "every subtask confirmed real" and tree.iterations == 1


async def test_a_dead_step_is_worth_nothing() -> None:
    rollout = TableRollout({"a@1": [{"kind": "dead", "error": "no action line"}]}, {})
    tree = SearchTree.build(["a"], [0.5])
    outcome = await run_search(tree, rollout, SearchSettings(iterations=1))
    assert outcome.iterations[0].reward == 0.0 and tree.subtask("a").value == 0.0 and rollout.confidence_calls == 0
