"""Ask a model for an answer in a given format: retry on unreadable text, then abstain.

A model that answers badly is a fact about the run, not a reason to crash or to guess, so the
outcome is always an :class:`Answer` whose ``value`` is None and ``error`` says why when it fails.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Callable, Generic, Sequence, TypeVar

from autogen_core.models import AssistantMessage, ChatCompletionClient, CreateResult, LLMMessage, UserMessage

import prompts
from m3d_agents.backends.choices import can_sample_choices
from m3d_agents.errors import ParseError

T = TypeVar("T")


@dataclass
class Answer(Generic[T]):
    value: T | None
    text: str
    error: str | None
    attempts: int

    @property
    def ok(self) -> bool:
        return self.error is None


def answer_text(content: Any) -> str:
    """The text of a completion; tool calls or other non-text content count as unreadable."""
    if isinstance(content, str):
        return content
    raise ParseError("text", f"the model returned {type(content).__name__} instead of text", repr(content)[:200])


async def ask(
    client: ChatCompletionClient,
    messages: Sequence[LLMMessage],
    parse: Callable[[str], T],
    *,
    retries: int = 2,
    create_kwargs: dict[str, Any] | None = None,
    on_retry: Callable[[], None] | None = None,
) -> Answer[T]:
    """Call ``client`` and ``parse`` its text, asking again up to ``retries`` times when it fails."""
    return await _settle(client, messages, parse, None, retries, create_kwargs or {}, on_retry)


async def _settle(
    client: ChatCompletionClient,
    messages: Sequence[LLMMessage],
    parse: Callable[[str], T],
    first: CreateResult | None,
    retries: int,
    create_kwargs: dict[str, Any],
    on_retry: Callable[[], None] | None,
) -> Answer[T]:
    """Parse ``first`` (or a fresh call's result), then follow an unreadable answer up as :func:`ask` does."""
    history = list(messages)
    text, error = "", "no attempt was made"
    for attempt in range(1, retries + 2):
        result = first if attempt == 1 and first is not None else await client.create(history, **create_kwargs)
        try:
            text = answer_text(result.content)
            return Answer(value=parse(text), text=text, error=None, attempts=attempt)
        except ParseError as exc:
            error = str(exc)
            text = text if isinstance(result.content, str) else repr(result.content)
        if attempt <= retries:
            if on_retry is not None:
                on_retry()
            history = [
                *history,
                AssistantMessage(content=text, source="assistant"),
                UserMessage(content=prompts.render("common/retry_unreadable", reason=error), source="user"),
            ]
    return Answer(value=None, text=text, error=error, attempts=retries + 1)


def choice_seed(create_kwargs: dict[str, Any], i: int) -> dict[str, Any]:
    """``create_kwargs`` for choice ``i``: the request's seed plus ``i`` (modulo 2**31), when it has one.

    Not a :func:`~debates.strategy.derive_seed` call site: this is the server's own rule for the ``n``
    choices of one request (vLLM seeds choice ``i`` with the request's seed plus ``i``), so a choice
    asked alone, when a server returned fewer, gets the seed that choice had.
    """
    extra = dict(create_kwargs.get("extra_create_args") or {})
    if extra.get("seed") is None:
        return create_kwargs
    extra["seed"] = (int(extra["seed"]) + i) % 2**31
    return {**create_kwargs, "extra_create_args": extra}


async def ask_choices(
    client: ChatCompletionClient,
    messages: Sequence[LLMMessage],
    parse: Callable[[str], T],
    n: int,
    *,
    retries: int = 2,
    create_kwargs: dict[str, Any] | None = None,
    on_retry: Callable[[], None] | None = None,
    one_request: bool = True,
) -> list[Answer[T]]:
    """``n`` independent answers to the same messages, each parsed and followed up like :func:`ask`.

    With ``one_request`` and a client that can (:mod:`m3d_agents.backends.choices`), they are the
    ``n`` choices of one request, so the prompt is sent and billed once; otherwise, and for any
    choice a server did not return, ``n`` concurrent calls. Choice ``i`` is asked with the seed of
    ``create_kwargs`` plus ``i``, so both ways draw from the same seeds. An unreadable choice is
    asked again on its own.
    """
    kwargs = create_kwargs or {}
    firsts: list[CreateResult] = []
    if one_request and n > 1 and can_sample_choices(client):
        choices = await client.create_choices(messages, n, **kwargs)  # type: ignore[attr-defined]
        firsts = list(choices.results[:n])
    return list(await asyncio.gather(*(
        _settle(client, messages, parse, firsts[i] if i < len(firsts) else None, retries, choice_seed(kwargs, i), on_retry)
        for i in range(n)
    )))
