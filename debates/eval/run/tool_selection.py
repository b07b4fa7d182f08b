"""Development accuracy of a configuration with a given tool set, for greedy tool selection (T2Agent's Alg. 2).

A configuration can be tuned when its model offers ``tool_verbs()`` (the toolbox) and
``with_tools(verbs)`` (a copy restricted to those verbs), as the ``t2agent`` configurations do.
Every tool set is run on the same development posts with the same seeds, so two sets differ
only in their tools; an abstention counts as a wrong answer, so a set cannot look better by
answering less.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any, Protocol, Sequence, runtime_checkable

from debates.session import RunSession, sample_seed
from m3d_agents.sample import Sample


@runtime_checkable
class ToolSelectable(Protocol):
    def tool_verbs(self) -> list[str]: ...

    def selection_base(self) -> list[str]: ...

    def with_tools(self, verbs: list[str] | tuple[str, ...]) -> Any: ...


def label_counts(samples: Sequence[Sample]) -> dict[str, int]:
    """How many samples carry each gold label, labels in sorted order."""
    counts: dict[str, int] = {}
    for sample in samples:
        if sample.gold_label is not None:
            counts[sample.gold_label] = counts.get(sample.gold_label, 0) + 1
    return dict(sorted(counts.items()))


def balanced_samples(samples: Sequence[Sample], limit: int, seed: int) -> list[Sample]:
    """Up to ``limit`` labelled samples, as even across gold labels as the data allow, drawn with ``seed``."""
    rng = random.Random(seed)
    by_label: dict[str, list[Sample]] = {}
    for sample in samples:
        if sample.gold_label is not None:
            by_label.setdefault(sample.gold_label, []).append(sample)
    for group in by_label.values():
        rng.shuffle(group)
    chosen: list[Sample] = []
    while len(chosen) < limit and any(by_label.values()):
        for label in sorted(by_label):
            if by_label[label] and len(chosen) < limit:
                chosen.append(by_label[label].pop())
    return chosen


async def config_accuracy(session: RunSession, samples: Sequence[Sample], *, concurrency: int = 4, seed: int = 0) -> float:
    """The share of ``samples`` whose verdict label equals the gold label, run in ``session`` (open), in the sample's
    own taxonomy (the run carries the configuration's answer over to it): four-class accuracy on MMFakeBench, binary
    on MediaEval."""
    gate = asyncio.Semaphore(concurrency)

    async def correct(sample: Sample) -> bool:
        async with gate:
            verdict = await session.run(sample, seed=sample_seed(seed, sample.id))
        return not verdict.abstained and verdict.label == sample.gold_label

    results = await asyncio.gather(*(correct(s) for s in samples))
    return sum(results) / len(samples) if samples else 0.0
