"""Best-of-N selection: the common score scale, the top-m early-stop rule, and what each turn records.

Scale. Every reward u and critique q is mapped onto [0, 1] by a fixed map, before any candidate is
compared: an LLM judge's score is already in [0, 1]; a reward model's logit goes through the
logistic function (two-class models: the probability of the positive class); a critic's 1-10 score
becomes (score - 1) / 9. So s = u + q lies in [0, 2] for critiqued turns and s = u in [0, 1]
otherwise, and tau is read on that scale. A fixed map is used instead of normalising over the N
candidates (min-max, z-score) because lazy scoring never sees all N scores.

Early stop, as AgentM3D's Alg. 1 is written (``scoring: all``): every candidate is scored, the N
scores are sorted in descending order, and m* is the smallest m >= 2 at which the top score exceeds
the mean of ranks 2..m by more than tau (else N); the best among the top m* wins, which is always
the best of all N. Read lazily (``scoring: lazy``, our variant): candidates are scored one at a time
in sampling order (the first two together), and after the m-th score the same rule is applied to
the m scores so far; scoring stops at the first m where it fires. That saves the reward and critique
calls of the later candidates, but the winner is the best of the first m* only. On a tie the
earliest candidate wins. With N = 1 nothing is scored (m* = 1), since there is nothing to choose between.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Sequence


def logistic(x: float) -> float:
    if x >= 0:
        return 1.0 / (1.0 + math.exp(-x))
    z = math.exp(x)
    return z / (1.0 + z)


def unit_from_ten_point(score: float) -> float:
    """A critic's 1-10 score on the common [0, 1] scale."""
    if not 1.0 <= score <= 10.0:
        raise ValueError(f"a 1-10 score was expected, got {score}")
    return (score - 1.0) / 9.0


def gap_exceeds(scores: Sequence[float], tau: float) -> bool:
    """Whether the top score beats the mean of the others (ranks 2..m) by more than tau."""
    if len(scores) < 2:
        return False
    ranked = sorted(scores, reverse=True)
    rest = ranked[1:]
    return ranked[0] - sum(rest) / len(rest) > tau


def early_stop_m(scores: Sequence[float], tau: float) -> int:
    """m*: the smallest m >= 2 at which the first m scores satisfy :func:`gap_exceeds`, else N."""
    if len(scores) <= 1:
        return len(scores)
    for m in range(2, len(scores) + 1):
        if gap_exceeds(scores[:m], tau):
            return m
    return len(scores)


def best_index(scores: Sequence[float | None]) -> int | None:
    """Position of the highest score, the earliest on a tie; None when nothing was scored."""
    best: int | None = None
    for i, score in enumerate(scores):
        if score is not None and (best is None or score > scores[best]):  # type: ignore[operator]
            best = i
    return best


@dataclass
class CandidateScore:
    """One candidate's scores on the common scale; an error says why a part is missing."""

    index: int
    reward: float | None = None
    critique: float | None = None
    critiqued: bool = False
    errors: list[str] = field(default_factory=list)

    @property
    def total(self) -> float | None:
        if self.reward is None or (self.critiqued and self.critique is None):
            return None
        return self.reward + (self.critique if self.critique is not None else 0.0)
