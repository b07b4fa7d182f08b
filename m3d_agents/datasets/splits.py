"""Temporal splits: the newest share of a data set as its test set, as FakingRecipe and FactGuard evaluate.

A random split lets a model see posts about the same event in training and test; splitting by
publication time keeps later events unseen. Rows without a date cannot be placed, so a temporal
split refuses a data set where none has one and counts the undated rows it leaves out.
"""

from __future__ import annotations

from datetime import date
from typing import Literal, Sequence

from m3d_agents.datasets.base import Skips
from m3d_agents.errors import InputError
from m3d_agents.sample import Sample

Split = Literal["all", "temporal", "temporal_train"]


def temporal_split(samples: Sequence[Sample], split: Split, test_fraction: float, skips: Skips) -> list[Sample]:
    """``temporal``: the newest ``test_fraction`` by ``metadata.claim_date``; ``temporal_train``: the rest; ``all``: every sample."""
    if split == "all":
        return list(samples)
    dated = [s for s in samples if s.metadata.claim_date is not None]
    if not dated:
        raise InputError("split", "a temporal split needs publication times, and no row has one")
    for _ in range(len(samples) - len(dated)):
        skips.add("no publication time (temporal split)")
    ordered = sorted(dated, key=lambda s: (s.metadata.claim_date or date.min, s.id))
    cut = len(ordered) - max(1, round(len(ordered) * test_fraction))
    return ordered[cut:] if split == "temporal" else ordered[:cut]
