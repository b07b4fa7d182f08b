"""Several answers to one request (the chat-completions ``n``): the prompt is sent, and billed, once.

Why: a tree search samples n children from one identical prompt. Hosted APIs (OpenAI) and vLLM
return n choices for one request and count its prompt tokens, images included, once; n separate
calls pay for the prompt n times. AutoGen's client contract has no such call (its OpenAI client
refuses ``n``), so a client that can make one says so by implementing :class:`ChoicesClient` with
``samples_choices`` true; every other client is asked n times by the caller
(:func:`m3d_agents.asking.ask_choices`). A server that ignores ``n`` and answers once is not an
error either: the caller asks for the missing choices separately.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Protocol, Sequence, runtime_checkable

from autogen_core import CancellationToken
from autogen_core.models import CreateResult, LLMMessage, RequestUsage
from pydantic import BaseModel


@dataclass(frozen=True)
class Choices:
    """The answers of one request, in the server's order, and the request's usage (prompt tokens counted once).

    Usage belongs to the request, not to a choice, so each result's own ``usage`` is zero."""

    results: list[CreateResult]
    usage: RequestUsage
    cached: bool = False


@runtime_checkable
class ChoicesClient(Protocol):
    @property
    def samples_choices(self) -> bool:
        """Whether :meth:`create_choices` may be called (a wrapper answers for the client it wraps)."""

    async def create_choices(
        self,
        messages: Sequence[LLMMessage],
        n: int,
        *,
        json_output: Optional[bool | type[BaseModel]] = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: Optional[CancellationToken] = None,
    ) -> Choices:
        """Up to ``n`` answers to ``messages`` from one request."""


def can_sample_choices(client: object) -> bool:
    return isinstance(client, ChoicesClient) and bool(client.samples_choices)
