"""Which samples a run takes: the first N, N at random, or N balanced across the gold labels; seeded, and
a larger N keeps the samples of a smaller one."""

from __future__ import annotations

from collections import Counter

import pytest

from m3d_agents.datasets.subsets import Subset
from m3d_agents.sample import Sample

POSTS = [Sample(text=f"post {i}", gold_label="fake" if i < 10 else "real", taxonomy="binary") for i in range(14)]
"""Ten fakes first, then four reals: MediaEval's development set starts like this."""


def labels(samples: list[Sample]) -> Counter[str | None]:
    return Counter(s.gold_label for s in samples)


def test_first_takes_the_data_sets_order_and_can_be_one_class() -> None:
    taken = Subset(how="first", limit=4).take(POSTS)
    assert taken == POSTS[:4] and labels(taken) == {"fake": 4}


@pytest.mark.parametrize("n", [2, 4, 6, 8])
def test_balanced_takes_the_classes_in_turn_while_both_last(n: int) -> None:
    taken = Subset(how="balanced", seed=3, limit=n).take(POSTS)
    assert labels(taken) == {"fake": n // 2, "real": n // 2}


def test_balanced_runs_out_of_the_smaller_class_then_takes_the_rest() -> None:
    taken = Subset(how="balanced", seed=0, limit=10).take(POSTS)
    assert labels(taken) == {"real": 4, "fake": 6}


@pytest.mark.parametrize("how", ["random", "balanced"])
def test_a_seed_gives_the_same_samples_and_another_seed_other_ones(how: str) -> None:
    one = Subset(how=how, seed=7, limit=5).take(POSTS)  # type: ignore[arg-type]
    assert one == Subset(how=how, seed=7, limit=5).take(POSTS)  # type: ignore[arg-type]
    assert one != Subset(how=how, seed=8, limit=5).take(POSTS)  # type: ignore[arg-type]


@pytest.mark.parametrize("how", ["first", "random", "balanced"])
def test_a_larger_limit_keeps_every_sample_of_a_smaller_one(how: str) -> None:
    small = Subset(how=how, seed=1, limit=4).take(POSTS)  # type: ignore[arg-type]
    large = Subset(how=how, seed=1, limit=9).take(POSTS)  # type: ignore[arg-type]
    assert large[:4] == small


def test_samples_without_a_gold_label_come_last_in_a_balanced_order() -> None:
    unlabelled = [Sample(text="no label", taxonomy="binary")]
    ordered = Subset(how="balanced").order(unlabelled + POSTS)
    assert ordered[-1].gold_label is None and len(ordered) == len(POSTS) + 1


def test_the_description_says_how_the_samples_were_chosen() -> None:
    assert Subset(how="balanced", seed=2, limit=4).describe(4, 14) == \
        "4 balanced across the gold labels (seed 2) from the data set's 14 samples"
    assert Subset(how="first", limit=4).describe(4, 14) == "the first 4 of the data set's 14 samples"
    assert Subset(how="random", limit=40).describe(14, 14) == "all 14 samples"
    assert Subset(how="first").identity() is None and Subset(how="random", seed=5).identity() == {"how": "random", "seed": 5}
