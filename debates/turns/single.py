"""Turn policy ``single``: one call per turn; an unreadable answer is retried, then reported as an error."""

from __future__ import annotations

from typing import Any, Callable, Sequence, TypeVar

from autogen_core.models import LLMMessage

from debates.turns.base import TURN_POLICIES, TurnContext
from m3d_agents.asking import Answer, ask
from m3d_agents.backends.metering import MeteredClient

T = TypeVar("T")


class SinglePass:
    """One call per turn; an unreadable answer is retried, then reported as an error."""

    async def produce(
        self,
        client: MeteredClient,
        messages: Sequence[LLMMessage],
        parse: Callable[[str], T],
        *,
        retries: int,
        create_kwargs: dict[str, Any],
        on_retry: Callable[[], None] | None,
        context: TurnContext,
    ) -> Answer[T]:
        return await ask(client, messages, parse, retries=retries, create_kwargs=create_kwargs, on_retry=on_retry)


TURN_POLICIES.add("single", lambda config: SinglePass(), "one call per turn")
