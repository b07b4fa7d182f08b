"""Turn policies: how a seat produces its message once the speaker policy has picked it.

``single`` is one model call (with the usual retry on unreadable text). ``best_of_n``
(:mod:`debates.turns.best_of_n`) and ``planned`` (:mod:`debates.turns.planned`) register themselves in
:data:`TURN_POLICIES` and are chosen per seat in the config, so any speaker policy can use them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence, TypeVar

from autogen_core.models import LLMMessage

from debates.config import DebateConfig, SeatConfig, TurnPolicyConfig
from debates.turns.scoring import SelectorState
from m3d_agents.asking import Answer, ask
from m3d_agents.backends.metering import MeteredClient
from m3d_agents.errors import InputError
from m3d_agents.media.images import PreparedSample

T = TypeVar("T")


@dataclass
class TurnContext:
    """What a turn policy may know beyond the messages: whose turn it is and the per-sample state.

    Critics need the seat's role and the post; the planner's decision is shared by every seat of
    the sample through ``selector``.
    """

    seat: SeatConfig
    config: DebateConfig
    prepared: PreparedSample
    selector: SelectorState
    vision: bool
    round: int


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
        context: TurnContext,
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
        context: TurnContext,
    ) -> Answer[T]:
        return await ask(client, messages, parse, retries=retries, create_kwargs=create_kwargs, on_retry=on_retry)


TurnPolicyFactory = Callable[[TurnPolicyConfig], TurnPolicy]
TURN_POLICIES: dict[str, TurnPolicyFactory] = {"single": lambda config: SinglePass()}


def build_turn_policy(config: TurnPolicyConfig) -> TurnPolicy:
    import debates.turns.best_of_n  # noqa: F401  (registers "best_of_n")
    import debates.turns.planned  # noqa: F401  (registers "planned")

    try:
        factory = TURN_POLICIES[config.kind]
    except KeyError:
        raise InputError("turn_policy.kind", f"unknown turn policy {config.kind!r}; known: {', '.join(TURN_POLICIES)}") from None
    return factory(config)
