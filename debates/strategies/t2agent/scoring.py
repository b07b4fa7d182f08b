"""The dual reward: the trajectory score S_T (eq. 1), the confidence score S_C (eq. 2), and V = α·S_T + (1 − α)·S_C.

Both scores are a whole number from 1 to 10 at the end of a short analysis ("... score is 7").
They are mapped to [0, 1] as s/10 by default: the paper's case-study rewards (0.2, 0.6, 0.8) are
multiples of 0.1, which (s − 1)/9 would not give. A score that cannot be read after the retries is
recorded as missing (None), never guessed.
"""

from __future__ import annotations

from typing import Literal

from m3d_agents.parsing import parse_ten_point_score

ScoreMap = Literal["tenth", "ninth"]


def unit_score(points: float, scale: ScoreMap = "tenth") -> float:
    """A 1..10 score on [0, 1]: s/10 (``tenth``) or (s − 1)/9 (``ninth``)."""
    return points / 10.0 if scale == "tenth" else (points - 1.0) / 9.0


def read_score(text: str, scale: ScoreMap = "tenth") -> float:
    """Read "... score is s" (s from 1 to 10) and map it; ParseError when absent or out of range."""
    return unit_score(parse_ten_point_score(text), scale)


def reward(alpha: float, trajectory_score: float | None, confidence_score: float | None) -> float:
    """V(answer) = α·S_T + (1 − α)·S_C; a missing score contributes nothing."""
    return alpha * (trajectory_score or 0.0) + (1.0 - alpha) * (confidence_score or 0.0)
