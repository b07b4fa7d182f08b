"""Which samples of a data set a run takes when it takes fewer than all: the first N, N at random, or
N balanced across the gold labels.

The first N rows of a data set are often one class (MediaEval's development set starts with ten
fakes), and a run over them reports a real-class support of 0 and a weighted precision of 1.000,
which says nothing. ``random`` and ``balanced`` draw with a seed, so a run can be repeated.

Each choice puts the whole data set in an order that depends on the seed only, and a run takes a
prefix of it: N + k samples hold the N of a smaller run, so a run resumed with a larger ``--limit``
keeps every row it has. ``balanced`` deals the classes in turn (each class in a seeded order), so
every prefix is as balanced as the data set allows; samples without a gold label come last.
"""

from __future__ import annotations

import random
from collections import defaultdict
from typing import Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field

from m3d_agents.sample import Sample

SampleChoice = Literal["first", "random", "balanced"]
SAMPLE_CHOICES: tuple[SampleChoice, ...] = ("first", "random", "balanced")


class Subset(BaseModel):
    """How a run chose its samples from its data set."""

    model_config = ConfigDict(extra="forbid")

    how: SampleChoice = Field("first", description="first: the data set's order; random: a seeded shuffle; balanced: "
                              "the gold labels dealt in turn, each in a seeded order")
    seed: int = Field(0, description="the seed of random and balanced (first ignores it)")
    limit: int | None = Field(None, gt=0, description="how many samples the run takes; None: all")

    def identity(self) -> dict[str, object] | None:
        """What a resumed run must share with the first: the order (how and seed), never the limit. None for
        ``first``, which is every run's order from before subsets had a name."""
        return None if self.how == "first" else {"how": self.how, "seed": self.seed}

    def order(self, samples: Sequence[Sample]) -> list[Sample]:
        """Every sample, in this subset's order."""
        if self.how == "first":
            return list(samples)
        rng = random.Random(self.seed)
        if self.how == "random":
            shuffled = list(samples)
            rng.shuffle(shuffled)
            return shuffled
        by_label: dict[str, list[Sample]] = defaultdict(list)
        unlabelled = []
        for sample in samples:
            if sample.gold_label is None:
                unlabelled.append(sample)
            else:
                by_label[sample.gold_label].append(sample)
        queues = []
        for label in sorted(by_label):
            members = by_label[label]
            rng.shuffle(members)
            queues.append(members)
        dealt = [queue[i] for i in range(max((len(q) for q in queues), default=0)) for queue in queues if i < len(queue)]
        return dealt + unlabelled

    def take(self, samples: Sequence[Sample]) -> list[Sample]:
        """The samples this run takes."""
        ordered = self.order(samples)
        return ordered[: self.limit] if self.limit else ordered

    def describe(self, taken: int, available: int) -> str:
        """In words, for reports: which samples and how they were chosen."""
        if taken >= available:
            return f"all {available} samples"
        return {
            "first": f"the first {taken} of the data set's {available} samples",
            "random": f"{taken} drawn at random (seed {self.seed}) from the data set's {available} samples",
            "balanced": f"{taken} balanced across the gold labels (seed {self.seed}) from the data set's {available} samples",
        }[self.how]
