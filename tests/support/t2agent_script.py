"""A scripted model for the tree search: tells priors, steps, trajectory scores and confidence scores apart.

Calls are recognised by the prompts' own closing lines ("The likelihoods are", "correctness
score", "reliability score", the action menu of a step), so one scripted backend serves a whole
search. Step answers come from a function of the step (which check, which step number, the seed
of the call); scores from functions of the prompt.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from autogen_core.models import LLMMessage

from tests.support.scripted import text_of

FAKE_ANSWER_OF = {"TEXT REFUTE": "text", "IMAGE REFUTE": "image", "MISMATCH": "cross_modal"}


def call_kind(messages: Sequence[LLMMessage]) -> str:
    prompt = text_of(messages)
    if "The likelihoods are" in prompt:
        return "prior"
    if "correctness score is" in prompt:
        return "trajectory_score"
    if "reliability score is" in prompt:
        return "confidence_score"
    if "Actions you may take" in prompt:
        return "step"
    return "other"


@dataclass(frozen=True)
class StepCall:
    """One step call as the script sees it."""

    check: str
    """The subtask, named by its fake answer's owner (text, image, cross_modal) or the fake answer itself."""
    k: int
    seed: int
    must_finish: bool
    prompt: str


def read_step_call(prompt: str, seed: int) -> StepCall:
    menu = re.search(r"- Finish\[([^\]]+)\] or Finish\[([^\]]+)\]: ends the check", prompt)
    fake = menu.group(1) if menu else ""
    must_finish = "This is your last step" in prompt
    number = re.search(r"Write step (\d+) now|Thought (\d+): <your conclusion", prompt)
    k = int(next(g for g in number.groups() if g)) if number else 1
    return StepCall(FAKE_ANSWER_OF.get(fake, fake), k, seed, must_finish, prompt)


def last_action(prompt: str) -> str:
    """The last ``Action k: ...`` of a score prompt's trajectory, or the answer line of an S_C prompt."""
    answer = re.search(r"The agent's answer: (Finish\[[^\]]*\])", prompt)
    if answer:
        return answer.group(1)
    actions = re.findall(r"Action \d+: (.+)", prompt)
    return actions[-1].strip() if actions else ""


def score(points: int | str) -> str:
    return points if isinstance(points, str) else f"The steps look reasonable. The score is {points}"


@dataclass
class TreeScript:
    step: Callable[[StepCall], str]
    trajectory: Callable[[str], int | str] = lambda prompt: 5
    confidence: Callable[[str], int | str] = lambda prompt: 5
    priors: str = "Quick look. The likelihoods are [0.6, 0.1, 0.3]"
    seen: list[str] = field(default_factory=list)

    def __call__(self, messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
        kind = call_kind(messages)
        self.seen.append(kind)
        prompt = text_of(messages)
        if kind == "prior":
            return self.priors
        if kind == "trajectory_score":
            return score(self.trajectory(prompt))
        if kind == "confidence_score":
            return score(self.confidence(prompt))
        if kind == "step":
            return self.step(read_step_call(prompt, int(kwargs.get("seed", 0) or 0)))
        raise AssertionError(f"unexpected prompt: {prompt[:120]}")


def _body_text(body: Mapping[str, Any]) -> str:
    parts: list[str] = []
    for message in body.get("messages", []):
        content = message.get("content", "")
        if isinstance(content, str):
            parts.append(content)
        else:
            parts.extend(part.get("text", "") for part in content if isinstance(part, dict))
    return "\n".join(parts)


def stub_tree_answer(body: Mapping[str, Any]) -> str | None:
    """What a loopback server answers to the tree search's calls: every check finds its part real
    (its second Finish answer) with a high confidence score; None for calls of other strategies."""
    prompt = _body_text(body)
    if "The likelihoods are" in prompt:
        count = int(re.search(r"with (\d+) numbers", prompt).group(1))  # type: ignore[union-attr]
        return "A quick look. The likelihoods are [" + ", ".join(["0.4"] * count) + "]"
    if "correctness score is" in prompt:
        return "The steps are sound. The correctness score is 7"
    if "reliability score is" in prompt:
        return "The answer follows from the steps. The reliability score is 9"
    menu = re.search(r"- Finish\[([^\]]+)\] or Finish\[([^\]]+)\]: ends the check", prompt)
    if menu is not None:
        return f"Thought 1: Nothing in the post contradicts this.\nAction 1: Finish[{menu.group(2)}]"
    return None
