"""The decision of T2Agent (eqs. 4–6): an early stop's class, else the fused per-subtask answers, else abstain.

Each verified subtask i (one with an evaluated answer that has a confidence score S_C) gives a
probability that the post is forged through that source: ``p_fake_i = S_C`` when the answer is
fake, ``1 − S_C`` when it is real (eq. 4). The post is real with ``p_real = Π (1 − p_fake_i)^(1/n)``,
the geometric mean over the n verified subtasks (eq. 5), and the label is the argmax of
``[p_real, p_fake_1, …]`` in config order (eq. 6), so a tie goes to real. Pure functions, no model.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal, Sequence

from debates.strategies.t2agent.tree import TIE_EPSILON, Answer, Node


@dataclass(frozen=True)
class SubtaskAnswer:
    """The answer of one verified subtask that enters the fusion."""

    subtask: str
    fake_label: str
    answer: Answer
    confidence: float

    @property
    def p_fake(self) -> float:
        """Eq. (4)."""
        return self.confidence if self.answer == "fake" else 1.0 - self.confidence


@dataclass(frozen=True)
class FusionDecision:
    """How the search came out: a label with its confidence, or None with the reason."""

    label: str | None
    confidence: float | None
    decided_by: Literal["early_stop", "fusion", "abstain"]
    reason: str
    p_real: float | None = None
    p_fake: dict[str, float] = field(default_factory=dict)


def fused_real_probability(answers: Sequence[SubtaskAnswer]) -> float:
    """Eq. (5): the geometric mean of ``1 − p_fake_i`` over the verified subtasks."""
    if not answers:
        raise ValueError("no verified subtask to fuse")
    return float(math.prod(1.0 - a.p_fake for a in answers) ** (1.0 / len(answers)))


def decide(
    answers: Sequence[SubtaskAnswer],
    real_label: str,
    early_stop: SubtaskAnswer | None = None,
) -> FusionDecision:
    """Eqs. (4)–(6), with the early stop first and an abstention when no subtask was verified.

    ``answers`` are in config order: the first maximum of ``[p_real, p_fake_1, …]`` wins.
    """
    if early_stop is not None:
        return FusionDecision(
            label=early_stop.fake_label, confidence=early_stop.confidence, decided_by="early_stop",
            reason=f"early stop: the {early_stop.subtask} subtask answered fake with confidence {early_stop.confidence:.2f}",
            p_fake={early_stop.subtask: early_stop.p_fake},
        )
    if not answers:
        return FusionDecision(label=None, confidence=None, decided_by="abstain",
                        reason="no subtask reached an answer with a readable confidence score")
    p_real = fused_real_probability(answers)
    best_label, best_p = real_label, p_real
    for answer in answers:
        if answer.p_fake > best_p + TIE_EPSILON:
            best_label, best_p = answer.fake_label, answer.p_fake
    p_fake = {a.subtask: a.p_fake for a in answers}
    reason = f"fusion of {len(answers)} verified subtask(s): p_real {p_real:.4f}, " + ", ".join(
        f"p_fake[{name}] {p:.4f}" for name, p in p_fake.items()
    )
    return FusionDecision(label=best_label, confidence=best_p, decided_by="fusion", reason=reason, p_real=p_real, p_fake=p_fake)


def chosen_answer(answers: Sequence[Node], pick: Literal["best_reward", "latest"] = "best_reward") -> Node | None:
    """The answer of one subtask that enters the fusion, among its evaluated answers with an S_C.

    ``best_reward``: the highest reward, a tie going to the answer evaluated last; ``latest``: the last.
    """
    scored = sorted((a for a in answers if a.confidence_score is not None), key=lambda a: a.evaluated_order or 0)
    if not scored:
        return None
    if pick == "latest":
        return scored[-1]
    best = scored[0]
    for answer in scored[1:]:
        if (answer.reward or 0.0) >= (best.reward or 0.0) - TIE_EPSILON:
            best = answer
    return best


def subtask_answer(node: Node, fake_label: str) -> SubtaskAnswer:
    assert node.answer is not None and node.confidence_score is not None
    return SubtaskAnswer(subtask=node.subtask or "", fake_label=fake_label, answer=node.answer, confidence=node.confidence_score)
