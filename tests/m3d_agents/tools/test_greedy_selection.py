"""Greedy tool selection's three readings on one scripted accuracy table."""

from __future__ import annotations

import pytest

from m3d_agents.tools.greedy_selection import greedy_select

TABLE = {("base",): 0.50, ("base", "A"): 0.55, ("base", "A", "B"): 0.52, ("base", "B"): 0.53}


def evaluate(tools: tuple[str, ...]) -> float:
    return TABLE[tools]


def test_running_keeps_a_tool_only_when_it_beats_the_best_so_far() -> None:
    result = greedy_select(["base"], ["A", "B"], evaluate)
    assert result.chosen == ("base", "A") and result.accuracy == pytest.approx(0.55)
    assert [s.kept for s in result.steps] == [True, False]


def test_baseline_compares_every_candidate_with_the_base_sets_accuracy_as_alg2_prints_it() -> None:
    result = greedy_select(["base"], ["A", "B"], evaluate, compare_to="baseline")
    assert result.chosen == ("base", "A", "B") and result.accuracy == pytest.approx(0.52)
    assert [s.tools for s in result.steps] == [("base", "A"), ("base", "A", "B")]


def test_independent_judges_each_tool_alone_on_the_base_set() -> None:
    seen: list[tuple[str, ...]] = []

    def counted(tools: tuple[str, ...]) -> float:
        seen.append(tools)
        return TABLE[tools]

    result = greedy_select(["base"], ["A", "B"], counted, mode="independent")
    assert [s.tools for s in result.steps] == [("base", "A"), ("base", "B")]
    assert result.chosen == ("base", "A", "B") and result.accuracy == pytest.approx(0.52)
    assert seen == [("base",), ("base", "A"), ("base", "B"), ("base", "A", "B")], "each set is evaluated once"
