"""Whether a model's answer repeats its prompt instead of answering it.

A model too small for the task (the embedded 270M one) often copies its prompt back: the post, the
forensic findings, the answer format. Read as an answer, such a copy looks like a reason and shows
what the model was told as if it had concluded it. So every call's answer is compared with its
prompt (:class:`~m3d_agents.backends.metering.MeteredClient`), a repeated prompt is counted in the
accounting (``recited_prompts``), and a verdict whose explanation is such a copy says so instead of
printing it as one.

The comparison is on words, not characters, so the JSON an answer may be wrapped in (escapes, key
names) does not hide a copy: an answer recites its prompt when at least half of its runs of
:data:`RUN` consecutive words also occur in the prompt. An earlier answer of the same sample that the
prompt quotes (a debate's prompt quotes the turns so far) is taken out of it once first
(:func:`given`): a debater that repeats its own argument, or another's, keeps to an argument, which
is another matter, while one that copies the post again still copies the post.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Sequence

RUN = 5
"""Words in a run: long enough that ordinary answers share few runs with their prompt by chance."""

SHARE = 0.5
"""The share of an answer's runs found in the prompt from which the answer counts as a copy."""

_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


Run = tuple[str, ...]


def runs(text: str) -> list[Run]:
    """The text's runs of :data:`RUN` consecutive words, in order, repeats kept."""
    found = words(text)
    return [tuple(found[i:i + RUN]) for i in range(len(found) - RUN + 1)]


def given(prompt: str, earlier: Sequence[Sequence[Run]] = ()) -> set[Run]:
    """The runs of ``prompt`` that are its own material: each earlier answer (its runs) that the prompt quotes is
    taken out once, so a run of the post stays when an earlier answer had copied it too."""
    counts = Counter(runs(prompt))
    for answer in earlier:
        if answer and sum(run in counts for run in answer) / len(answer) >= SHARE:
            counts.subtract(answer)
    return {run for run, count in counts.items() if count > 0}


def recites(prompt: str | set[Run], answer: str) -> bool:
    """Whether ``answer`` mostly repeats ``prompt`` (its text, or the runs :func:`given` keeps); an answer of fewer
    than two runs' worth of words is too short to tell and never counts."""
    answered = runs(answer)
    if len(answered) < RUN + 1:
        return False
    material = set(runs(prompt)) if isinstance(prompt, str) else prompt
    return sum(run in material for run in answered) / len(answered) >= SHARE
