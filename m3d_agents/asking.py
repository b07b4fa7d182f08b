"""Ask a model for an answer in a given format: retry on unreadable text, then abstain.

A model that answers badly is a fact about the run, not a reason to crash or to guess, so the
outcome is always an :class:`Answer` whose ``value`` is None and ``error`` says why when it fails.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, Sequence, TypeVar

from autogen_core.models import AssistantMessage, ChatCompletionClient, LLMMessage, UserMessage

import prompts
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
    history = list(messages)
    text, error = "", "no attempt was made"
    for attempt in range(1, retries + 2):
        result = await client.create(history, **(create_kwargs or {}))
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
