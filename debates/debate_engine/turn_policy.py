"""Turn policies: how a seat produces its message once the protocol has picked it.

A turn policy is chosen per seat in the configuration (``turn_policy.kind``), so any protocol can
use any of them: ``single`` (:mod:`debates.turns.single`), ``best_of_n``
(:mod:`debates.turns.best_of_n`) and ``planned`` (:mod:`debates.turns.planned`). This module holds
the contract, the per-turn context and the registry; it imports no implementation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Generic, Protocol, Sequence, TypeVar

from autogen_core.models import LLMMessage

from debates.debate_engine.config import DebateConfig, SeatConfig, TurnPolicyConfig
from debates.debate_engine.turn_state import TurnPolicyState
from m3d_agents.asking import Answer, ask
from m3d_agents.backends.metering import MeteredClient
from m3d_agents.registry import Registry
from m3d_agents.media.images import PreparedSample
from m3d_agents.tools.cards import ToolContext

T = TypeVar("T")


@dataclass
class TurnContext:
    """What a turn policy may know beyond the messages: whose turn it is and the per-sample state.

    Critics need the seat's role and the post; the planner's decision is shared by every seat of
    the sample through ``turn_state``.
    """

    seat: SeatConfig
    config: DebateConfig
    prepared: PreparedSample
    turn_state: TurnPolicyState
    vision: bool
    round: int
    tools: ToolContext | None = None
    """The tools bound to this sample and seat (its backend, ledger and searchers), for policies whose
    turn calls tools (``react``); None where the seat has none."""


@dataclass(frozen=True)
class TurnRequest(Generic[T]):
    """One turn to produce: whom to ask, what to send, how to read the answer, how often to ask again.

    One object instead of seven parameters, so a policy that wraps another (``planned`` around
    ``best_of_n``) hands the turn on unchanged, and a new field reaches every policy at once.
    """

    client: MeteredClient
    messages: Sequence[LLMMessage]
    parse: Callable[[str], T]
    retries: int
    create_kwargs: dict[str, Any]
    on_retry: Callable[[], None] | None
    context: TurnContext

    async def ask(self, messages: Sequence[LLMMessage] | None = None, **create_kwargs: Any) -> Answer[T]:
        """One answer to these messages (or others), retried while unreadable; ``create_kwargs`` replace the turn's."""
        return await ask(
            self.client, self.messages if messages is None else messages, self.parse, retries=self.retries,
            create_kwargs={**self.create_kwargs, **create_kwargs}, on_retry=self.on_retry,
        )


class TurnPolicy(Protocol):
    async def produce(self, request: TurnRequest[T]) -> Answer[T]: ...


TurnPolicyFactory = Callable[[Any], TurnPolicy]
"""Builds a turn policy from the seat's settings of the factory's own kind (the registry is keyed by ``kind``,
the settings are a union on it, so a factory is only ever handed its own variant)."""
TURN_POLICIES: Registry[TurnPolicyFactory] = Registry("turn policy", field="turn_policy.kind", plugins=("debates.turns",))
"""Turn policies by name, each a factory from the seat's turn-policy settings; the built-in ones
register when :mod:`debates.turns` is imported (on the first lookup)."""


def build_turn_policy(config: TurnPolicyConfig) -> TurnPolicy:
    return TURN_POLICIES.get(config.kind)(config)
