"""A scripted model for selector tests: recognises which agent is asking and answers from a table.

Calls are told apart by the prompts' own wording (planner, reward judge, critic, logic check,
otherwise a candidate or a single-pass turn), so one scripted backend can serve a whole seat.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from autogen_core.models import LLMMessage

from tests.support.scripted import text_of


BARE_SCORE = "Reply with the score alone"
"""What a critic in the bare-score format (AgentM3D's) is asked; a prose critic is not."""


def call_kind(messages: Sequence[LLMMessage]) -> str:
    system = text_of(messages[:1])
    last = text_of(messages[-1:])
    if "strict grader" in last:
        return "reward"
    if "checking effort" in system:
        return "planner"
    if "You are a critic" in system:
        return "critique"
    if "internal logic, not for its truth" in last:
        return "logic"
    return "answer"


def seat_role(messages: Sequence[LLMMessage]) -> str:
    """The asking seat's role, from its system prompt, or (a chained cascade, whose steps share one
    system prompt) from the step named at the end of its request."""
    system = text_of(messages[:1]) + "\n" + text_of(messages[-1:])
    for marker, role in (("its TEXT is true", "text"), ("its IMAGE is genuine", "image"),
                         ("image and its text belong together", "cross_modal"), ("classifying one social-media post", "single")):
        if marker in system:
            return role
    return "debater"


@dataclass
class SelectorScript:
    """Answers per kind of call; ``answers[role]`` maps a candidate number (0..N-1) to text.

    A candidate's number comes from its seed: the N candidates of a best-of-N turn are seeded as the N
    choices of one request, the turn's candidate seed plus i, and sent in order; so a seed one above a
    seen one is the next candidate, and any other is a turn's first (a single-pass turn is candidate 0).
    A re-ask of an unreadable candidate keeps its seed, so it keeps its number.
    """

    answers: Mapping[str, Callable[[int], str]]
    reward: Callable[[str], str] = lambda candidate: "SCORE: 0.5"
    critique: Callable[[str], str] = lambda prompt: "0.5" if BARE_SCORE in prompt else "Fine. The score is 5"
    plan: str = "[BON level-1]"
    logic: str = '{"consistent": true, "issues": [], "rationale": "The claim is internally consistent."}'
    seen: list[tuple[str, str]] = field(default_factory=list)
    _numbers: dict[int, int] = field(default_factory=dict)

    def __call__(self, messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
        kind = call_kind(messages)
        self.seen.append((kind, seat_role(messages)))
        if kind == "reward":
            return self.reward(text_of(messages[-2:-1]))
        if kind == "critique":
            return self.critique(text_of(messages))
        if kind == "planner":
            return self.plan
        if kind == "logic":
            return self.logic
        seed = int(kwargs.get("seed", 0) or 0)
        if seed not in self._numbers:
            before = self._numbers.get((seed - 1) % 2**31)
            self._numbers[seed] = 0 if before is None else before + 1
        return self.answers[seat_role(messages)](self._numbers[seed])


def _json_text(message: Mapping[str, Any]) -> str:
    content = message.get("content", "")
    if isinstance(content, str):
        return content
    return "\n".join(part.get("text", "") for part in content if isinstance(part, dict))


def stub_answer(body: Mapping[str, Any]) -> str:
    """What the loopback OpenAI-compatible server answers: a plausible reply for every kind of call."""
    messages = body.get("messages", [])
    system = _json_text(messages[0]) if messages else ""
    last = _json_text(messages[-1]) if messages else ""
    if "strict grader" in last:
        return "SCORE: 0.7"
    if re.search(r"Step \d+ of \d+", last):
        system += "\n" + last
    if "checking effort" in system:
        return "A specific claim about a breaking event. [BON level-1]"
    if "You are a critic" in system:
        return "0.8" if BARE_SCORE in system else "The answer follows from the evidence. The score is 8"
    if "reasoning inside a claim" in system:
        return "The claim is internally consistent."
    for marker, action in (("its TEXT is true", "TEXT SUPPORT"), ("its IMAGE is genuine", "IMAGE REFUTE"),
                           ("image and its text belong together", "MATCH")):
        if marker in system:
            return f"The stub looked at its part.\nFinish[{action}]\nCONFIDENCE: 0.6"
    return "The stub read the post. FINAL ANSWER: visual_veracity_distortion\nCONFIDENCE: 0.6"
