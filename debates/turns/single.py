"""Turn policy ``single``: one call per turn; an unreadable answer is retried, then reported as an error."""

from __future__ import annotations

from typing import TypeVar


from debates.debate_engine.turn_policy import TURN_POLICIES, TurnRequest
from m3d_agents.asking import Answer

T = TypeVar("T")


class SinglePass:
    """One call per turn; an unreadable answer is retried, then reported as an error."""

    async def produce(self, request: TurnRequest[T]) -> Answer[T]:
        return await request.ask()


TURN_POLICIES.add("single", lambda config: SinglePass(), "one call per turn")
