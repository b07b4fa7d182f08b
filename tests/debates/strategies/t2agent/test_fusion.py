"""The decision (eqs. 4–6): the truth table of the spec, the paper's bad case, ties, abstention, a property."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from debates.strategies.t2agent.fusion import SubtaskAnswer, chosen_answer, decide, fused_real_probability
from debates.strategies.t2agent.tree import Node

LABELS = {"text": "textual_veracity_distortion", "image": "visual_veracity_distortion",
          "cross_modal": "cross_modal_consistency_distortion"}


def given_answers(*rows: tuple[str, str, float]) -> list[SubtaskAnswer]:
    """Rows in config order (text, image, cross_modal), whatever order they are written in."""
    order = list(LABELS)
    ordered = sorted(rows, key=lambda row: order.index(row[0]))
    return [SubtaskAnswer(name, LABELS[name], verdict, s_c) for name, verdict, s_c in ordered]  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("rows", "p_real", "label"),
    [
        ([("text", "real", 0.8), ("cross_modal", "fake", 0.6), ("image", "real", 0.7)], 0.607318, "original"),
        ([("text", "real", 0.7)], 0.7, "original"),
        ([("cross_modal", "fake", 0.5)], 0.5, "original"),
        ([("text", "fake", 0.7), ("cross_modal", "fake", 0.6)], 0.346410, "textual_veracity_distortion"),
        ([("text", "real", 0.9), ("image", "fake", 0.7), ("cross_modal", "real", 0.9)], 0.624025, "visual_veracity_distortion"),
        ([("cross_modal", "real", 0.6), ("text", "real", 0.8), ("image", "real", 0.8)], 0.726848, "original"),
    ],
)
def test_the_truth_table(rows: list[tuple[str, str, float]], p_real: float, label: str) -> None:
    decision = decide(given_answers(*rows), "original")
    assert decision.decided_by == "fusion"
    assert decision.p_real == pytest.approx(p_real, abs=1e-6)
    assert decision.label == label
    assert decision.confidence == pytest.approx(max([p_real, *decision.p_fake.values()]), abs=1e-6)


def test_an_early_stop_decides_without_fusion() -> None:
    early = SubtaskAnswer("cross_modal", LABELS["cross_modal"], "fake", 0.8)
    decision = decide(given_answers(("text", "real", 0.9)), "original", early_stop=early)
    assert (decision.label, decision.confidence, decision.decided_by) == ("cross_modal_consistency_distortion", 0.8, "early_stop")
    assert decision.p_real is None


def test_no_verified_subtask_abstains_with_the_reason() -> None:
    decision = decide([], "original")
    assert decision.label is None and decision.decided_by == "abstain" and "no subtask" in decision.reason


def test_the_answer_that_enters_fusion_is_the_best_rewarded_and_the_latest_on_a_tie() -> None:
    def node(i: int, reward: float, s_c: float | None = 0.5) -> Node:
        return Node(id=i, kind="answer", subtask="text", depth=1, reward=reward, confidence_score=s_c, evaluated_order=i)

    first, second, third = node(1, 0.7), node(2, 0.7), node(3, 0.6)
    assert chosen_answer([first, second, third]) is second
    assert chosen_answer([first, second, third], "latest") is third
    assert chosen_answer([node(4, 0.9, None)]) is None


fake_probabilities = st.lists(
    st.tuples(st.sampled_from(["fake", "real"]), st.floats(min_value=0.0, max_value=1.0, allow_nan=False)), min_size=1, max_size=5
)


@given(fake_probabilities)
def test_p_real_lies_between_the_smallest_and_largest_one_minus_p_fake(rows: list[tuple[str, float]]) -> None:
    answers = [SubtaskAnswer(f"s{i}", "textual_veracity_distortion", verdict, s_c) for i, (verdict, s_c) in enumerate(rows)]  # type: ignore[arg-type]
    complements = [1.0 - a.p_fake for a in answers]
    p_real = fused_real_probability(answers)
    assert min(complements) - 1e-9 <= p_real <= max(complements) + 1e-9
