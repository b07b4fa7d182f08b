"""``sync``: every debater answers at once in each round and sees only the previous round."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from debates.chat.protocol import protocol
from debates.strategies.debate.protocols.base import DEBATER, DebaterProtocol, consensus_reason

if TYPE_CHECKING:
    from debates.chat.state import DebateState


@protocol("sync")
class SyncDebate(DebaterProtocol):
    """Concurrent rounds: everyone answers at once, seeing the previous round only."""

    previous_round_only: ClassVar[bool] = True

    def next_speakers(self, state: DebateState) -> list[str] | None:
        if self.consensus_reached(state):
            return self.close(state, consensus_reason(state))
        if state.completed_rounds() >= state.config.max_rounds:
            return self.close(state, f"maximum of {state.config.max_rounds} rounds reached")
        return state.seats_with_role(DEBATER)
