"""Turn policies: how a seat produces its message once the speaker policy has picked it.

``single`` is one model call (with the usual retry on unreadable text). Other policies, such as
best-of-N, register themselves in :data:`TURN_POLICIES` and are chosen per seat in the config.
"""

from __future__ import annotations

from typing import Any, Callable, Protocol, Sequence, TypeVar

from autogen_core.models import LLMMessage

from debates.config import TurnPolicyConfig
from m3d_agents.asking import Answer, ask
from m3d_agents.backends.metering import MeteredClient

T = TypeVar("T")


class TurnPolicy(Protocol):
    async def produce(
        self,
        client: MeteredClient,
        messages: Sequence[LLMMessage],
        parse: Callable[[str], T],
        *,
        retries: int,
        create_kwargs: dict[str, Any],
        on_retry: Callable[[], None] | None,
    ) -> Answer[T]: ...


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
    ) -> Answer[T]:
        return await ask(client, messages, parse, retries=retries, create_kwargs=create_kwargs, on_retry=on_retry)


TurnPolicyFactory = Callable[[TurnPolicyConfig], TurnPolicy]
TURN_POLICIES: dict[str, TurnPolicyFactory] = {"single": lambda config: SinglePass()}


def build_turn_policy(config: TurnPolicyConfig) -> TurnPolicy:
    try:
        return TURN_POLICIES[config.kind](config)
    except KeyError:
        from m3d_agents.errors import InputError

        raise InputError("turn_policy.kind", f"unknown turn policy {config.kind!r}; known: {', '.join(TURN_POLICIES)}") from None
