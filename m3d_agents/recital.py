"""Whether a model's answer repeats its prompt instead of answering it.

A model too small for the task (the embedded 270M one) often copies its prompt back: the post, the
forensic findings, the answer format. Read as an answer, such a copy looks like a reason and shows
what the model was told as if it had concluded it. So every call's answer is compared with its
prompt (:class:`~m3d_agents.backends.metering.MeteredClient`), a repeated prompt is counted in the
accounting (``recited_prompts``), and a verdict whose explanation is such a copy says so instead of
printing it as one.

The comparison is on words, not characters, so the JSON an answer may be wrapped in (escapes, key
names) does not hide a copy: an answer recites its prompt when at least half of its runs of
:data:`RUN` consecutive words also occur in the prompt.
"""

from __future__ import annotations

import re

RUN = 5
"""Words in a run: long enough that ordinary answers share few runs with their prompt by chance."""

SHARE = 0.5
"""The share of an answer's runs found in the prompt from which the answer counts as a copy."""

_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def runs(text: str) -> set[tuple[str, ...]]:
    found = words(text)
    return {tuple(found[i:i + RUN]) for i in range(len(found) - RUN + 1)}


def recites(prompt: str | set[tuple[str, ...]], answer: str) -> bool:
    """Whether ``answer`` mostly repeats ``prompt`` (its text, or its :func:`runs`); an answer of fewer than
    two runs' worth of words is too short to tell and never counts."""
    said = words(answer)
    if len(said) < 2 * RUN:
        return False
    given = runs(prompt) if isinstance(prompt, str) else prompt
    answered = [tuple(said[i:i + RUN]) for i in range(len(said) - RUN + 1)]
    return sum(run in given for run in answered) / len(answered) >= SHARE
