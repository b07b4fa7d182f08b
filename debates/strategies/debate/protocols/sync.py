"""``sync``: every debater answers at once in each round and sees only the previous round."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from debates.debate_engine.protocol import protocol
from debates.strategies.debate.protocols.base import DEBATER, DebateDefaults

if TYPE_CHECKING:
    from debates.debate_engine.state import DebateState


@protocol("sync")
class SyncDebate(DebateDefaults):
    """Concurrent rounds: everyone answers at once, seeing the previous round only."""

    previous_round_only: ClassVar[bool] = True

    def next_speakers(self, state: DebateState) -> list[str] | None:
        reason = self.stops.reason(state)
        if reason is not None:
            return self.close(state, reason)
        return state.seats_with_role(DEBATER)
