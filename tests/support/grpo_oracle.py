"""Eq. 7's group-normalised advantage written out by hand: the oracle the TRL path's advantages are checked against."""

from __future__ import annotations

import math
from typing import Sequence


def group_advantages(rewards: Sequence[float], group_size: int, epsilon: float = 1e-4) -> list[float]:
    """``A_i = (R_i − mean R) / std R`` within each group of ``group_size`` consecutive rollouts (Eq. 7).

    The standard deviation is the sample one plus ``epsilon``, as TRL computes it, so a group whose
    rewards are all equal gets zero advantages.
    """
    if group_size < 1 or len(rewards) % group_size:
        raise ValueError(f"{len(rewards)} rewards do not split into groups of {group_size}")
    out: list[float] = []
    for start in range(0, len(rewards), group_size):
        group = list(rewards[start : start + group_size])
        mean = sum(group) / len(group)
        std = math.sqrt(sum((r - mean) ** 2 for r in group) / (len(group) - 1)) if len(group) > 1 else 0.0
        out += [(r - mean) / (std + epsilon) for r in group]
    return out
