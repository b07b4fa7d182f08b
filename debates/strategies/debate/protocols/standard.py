"""``standard``: one seat classifies the post in one answer (AgentM3D's first baseline row)."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from m3d_agents.fence import render_prompt
from debates.debate_engine.protocol import protocol
from debates.debate_engine.protocol import DebateOutcome
from debates.debate_engine.stopping import FinalAnswer, StopRule
from debates.strategies.debate.protocols.base import SoloProtocol, single_answer, stated_or_one

if TYPE_CHECKING:
    from debates.debate_engine.state import DebateState
    from debates.debate_engine.config import DebateConfig, SeatConfig
    from m3d_agents.labels import Taxonomy

SINGLE = "single"


@protocol("standard")
class Standard(SoloProtocol):
    """One seat answers once."""

    roles: ClassVar[frozenset[str]] = frozenset({SINGLE})
    stops: ClassVar[StopRule] = FinalAnswer(SINGLE, "single answer given")

    def validate(self, config: DebateConfig) -> None:
        roles = [s.role for s in config.seats]
        if roles != [SINGLE]:
            raise ValueError(f"the standard protocol has exactly one seat of role single, got {roles}")

    def next_speakers(self, state: DebateState) -> list[str] | None:
        reason = self.stops.reason(state)
        if reason is not None:
            state.stop_reason = reason
            return None
        return [state.config.seats[0].name]

    def system_prompt(self, seat: SeatConfig, config: DebateConfig, taxonomy: Taxonomy) -> str:
        return render_prompt("debate/standard_system", answer_format=self.answer_format(taxonomy))

    def decide(self, state: DebateState) -> DebateOutcome:
        return single_answer(state, state.config.seats[0].name, SINGLE)

    def confidence(self, state: DebateState, decision: DebateOutcome) -> float:
        return stated_or_one(state, state.config.seats[0].name)
