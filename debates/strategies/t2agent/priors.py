"""Initial values of the subtask nodes: one model call (``lvlm``), ``uniform``, or ``random`` with a seed.

The model's list is kept as given, each value clipped to [0, 1]: the paper does not say the
likelihoods sum to 1, and they are independent questions (a post can be both false and
mismatched). An unreadable list, after the retries, gives uniform priors with the error
recorded: priors only order the first visits, so the search can go on honestly without them.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any, Literal, Sequence

from autogen_core.models import ChatCompletionClient, LLMMessage

from m3d_agents.asking import ask
from m3d_agents.parsing import parse_probabilities

PriorSource = Literal["lvlm", "uniform", "random", "uniform_after_error", "single_subtask"]


@dataclass(frozen=True)
class Priors:
    values: list[float]
    source: PriorSource
    text: str = ""
    error: str | None = None
    attempts: int = 0


def uniform_priors(k: int) -> list[float]:
    return [1.0 / k] * k


def random_priors(k: int, seed: int) -> list[float]:
    """Table 7's ablation: independent uniform draws, reproducible from ``seed``."""
    rng = random.Random(f"t2agent-priors|{seed}")
    return [round(rng.random(), 6) for _ in range(k)]


async def model_priors(
    client: ChatCompletionClient,
    messages: Sequence[LLMMessage],
    k: int,
    *,
    retries: int,
    create_kwargs: dict[str, Any],
    on_retry: Any = None,
) -> Priors:
    """Ask for ``[p1, ..., pk]``; a wrong count or no list is retried, then uniform with the error kept."""
    answer = await ask(
        client, messages, lambda text: parse_probabilities(text, expected=k, sum_to_one=False),
        retries=retries, create_kwargs=create_kwargs, on_retry=on_retry,
    )
    if answer.value is None:
        return Priors(uniform_priors(k), "uniform_after_error", answer.text, answer.error, answer.attempts)
    return Priors(list(answer.value), "lvlm", answer.text, None, answer.attempts)
