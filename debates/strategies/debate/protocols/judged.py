"""``judged``: debaters defend assigned stances for a fixed number of rounds; a judge decides.

The debaters argue, they do not vote: their messages need no answer line, and agreement does not
end the debate. The judge sees the post and the debaters' messages, never the retrieved evidence
(see :meth:`DebateDefaults.post_block`), so the information gap of the setting holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import prompts
from m3d_agents.fence import render_prompt
from debates.debate_engine.protocol import protocol
from debates.debate_engine.stopping import MaxRounds, StopRule
from debates.strategies.debate.protocols.base import DEBATER, JUDGE, DebateDefaults, other_side

if TYPE_CHECKING:
    from debates.debate_engine.state import DebateState
    from debates.debate_engine.visibility import SeatView
    from debates.debate_engine.config import DebateConfig, SeatConfig
    from m3d_agents.labels import Taxonomy

STANCE_TEXT = {
    "misinformation": "the post IS misinformation",
    "not_misinformation": "the post is NOT misinformation",
}


@protocol("judged")
class JudgedDebate(DebateDefaults):
    """Two sides defend assigned stances; a judge who never sees the evidence decides."""

    stops: ClassVar[StopRule] = MaxRounds()
    """Agreement does not end a judged debate: the sides argue every round, then the judge decides."""

    def validate(self, config: DebateConfig) -> None:
        super().validate(config)
        if [s.role for s in config.seats].count(JUDGE) != 1:
            raise ValueError("a judged debate needs exactly one judge seat")
        if any(s.role == DEBATER and not s.stance for s in config.seats):
            raise ValueError("every debater of a judged debate needs an assigned stance")

    def needs_judge(self, state: DebateState) -> bool:
        return True

    def answers_required(self, seat: SeatConfig, config: DebateConfig) -> bool:
        return seat.role == JUDGE

    def instruction(self, view: SeatView) -> str:
        """A debater's turns ask for its case, never for an independent view or an answer: its stance
        is fixed and the judge decides (the base prompts ask "do you agree?" and for an answer line)."""
        if view.seat.role == JUDGE:
            return super().instruction(view)
        if view.own_round == 1:
            return prompts.load("debate/judged_turn_first")
        return prompts.render("debate/judged_turn_later", round=view.own_round, history=view.history(self.visible(view)), **other_side(view))

    def system_prompt(self, seat: SeatConfig, config: DebateConfig, taxonomy: Taxonomy) -> str:
        if seat.role == JUDGE:
            return super().system_prompt(seat, config, taxonomy)
        stance = seat.stance or ""
        return render_prompt(
            "debate/judged_debater_system", framing=self.framing(config),
            stance_text=STANCE_TEXT.get(stance, f"the correct label is '{stance}'"),
        )
