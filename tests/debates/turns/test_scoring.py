"""Best-of-N scoring: the top-m early-stop rule on hand-computed vectors and the common score scale."""

from __future__ import annotations


import pytest

from debates.turns.scoring import CandidateScore, best_index, early_stop_m, gap_exceeds, logistic, unit_from_ten_point


# --- early stop and normalisation ------------------------------------------------------------------


@pytest.mark.parametrize(
    "scores,m_star,best",
    [
        ([0.3], 1, 0),  # N = 1: nothing to compare
        ([0.9, 0.1], 2, 0),  # N = 2, gap 0.8 > 0.5
        ([0.5, 0.4], 2, 0),  # N = 2, no gap: m = N
        ([0.7] * 5, 5, 0),  # all equal: the gap is 0, m = N, the earliest wins
        ([1.0, 1.0, 0.2, 0.1, 0.0], 4, 0),  # a tie at the top: gaps 0, 0.4, then 1 - 1.3/3 = 0.567
        ([0.2, 1.6, 0.9, 0.0, 0.0], 2, 1),  # the later candidate wins at once: 1.4 > 0.5
        ([1.0, 0.75, 0.5, 0.25, 0.0], 5, 0),  # gap exactly 0.5 at m = 4 does not exceed tau; 0.625 at m = 5
        ([0.1, 0.2, 1.5, 0.0], 3, 2),  # sorted prefix [1.5, 0.2, 0.1]: 1.5 - 0.15 = 1.35
    ],
)
def test_early_stop_rule_on_hand_computed_vectors(scores: list[float], m_star: int, best: int) -> None:
    assert early_stop_m(scores, tau=0.5) == m_star
    assert best_index(scores[:m_star]) == best


def test_gap_and_best_index_edges() -> None:
    assert not gap_exceeds([], 0.5) and not gap_exceeds([2.0], 0.5)
    assert gap_exceeds([0.0, 0.6], 0.5) and not gap_exceeds([0.0, 0.5], 0.5)
    assert best_index([None, 0.4, 0.4]) == 1 and best_index([None, None]) is None


def test_rewards_and_critiques_share_one_scale() -> None:
    assert unit_from_ten_point(1) == 0.0 and unit_from_ten_point(10) == 1.0 and unit_from_ten_point(5.5) == 0.5
    with pytest.raises(ValueError):
        unit_from_ten_point(0)
    assert logistic(0.0) == 0.5 and logistic(40) == pytest.approx(1.0) and logistic(-800) == 0.0
    assert CandidateScore(0, reward=0.25, critique=0.5, critiqued=True).total == 0.75
    assert CandidateScore(0, reward=0.25).total == 0.25
    assert CandidateScore(0, reward=0.25, critiqued=True).total is None, "a missing critique is not a zero"
