"""``actor_skeptic``: an actor decides; a skeptic probes its reasoning; only the actor's answer counts.

Turns alternate actor, skeptic, actor, ... and end on the actor, after ``max_rounds`` actor turns
or as soon as the skeptic says it has no objections. Each sees the other's latest message.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, ClassVar

import prompts
from m3d_agents.fence import render_prompt
from debates.debate_engine.protocol import protocol
from debates.debate_engine.protocol import DebateOutcome
from debates.debate_engine.stopping import MaxRounds, StopRule
from debates.strategies.debate.protocols.base import DebateDefaults, single_answer, stated_or_one
from m3d_agents.grammars import Grammar, prose_or
from m3d_agents.parsing import strip_reasoning

if TYPE_CHECKING:
    from debates.debate_engine.state import DebateState
    from debates.debate_engine.visibility import SeatView, Seen
    from debates.debate_engine.config import DebateConfig, SeatConfig
    from m3d_agents.labels import Taxonomy

ACTOR = "actor"
SKEPTIC = "skeptic"
NO_OBJECTIONS = "NO OBJECTIONS"
_ONLY_NO_OBJECTIONS = re.compile(r"[\W_]*no\s+objections[\W_]*", re.IGNORECASE)


def has_no_objections(text: str) -> bool:
    """Whether the skeptic's whole message is the stop phrase (markdown and punctuation aside).

    A phrase inside a longer message ("no objections to the date, but who is the man?") still
    asks a question, so it must not end the debate.
    """
    return _ONLY_NO_OBJECTIONS.fullmatch(strip_reasoning(text).strip()) is not None


class NoObjections(StopRule):
    """The skeptic's latest message is the stop phrase alone."""

    def reason(self, state: DebateState) -> str | None:
        last = state.turns[-1] if state.turns else None
        if last is not None and last.role == SKEPTIC and has_no_objections(last.text):
            return f"the skeptic had no objections after round {state.rounds_of(state.seats_with_role(ACTOR)[0])}"
        return None


@protocol("actor_skeptic")
class ActorSkeptic(DebateDefaults):
    """One actor decides; a skeptic probes its reasoning."""

    roles: ClassVar[frozenset[str]] = frozenset({ACTOR, SKEPTIC})
    stops: ClassVar[StopRule] = NoObjections() | MaxRounds(after=ACTOR)

    def validate(self, config: DebateConfig) -> None:
        super().validate(config)
        roles = [s.role for s in config.seats]
        if roles.count(ACTOR) != 1 or roles.count(SKEPTIC) != 1:
            raise ValueError("actor_skeptic needs exactly one actor and one skeptic")

    def deciders(self, config: DebateConfig) -> list[str]:
        return [s.name for s in config.seats if s.role == ACTOR]

    def next_speakers(self, state: DebateState) -> list[str] | None:
        reason = self.stops.reason(state)
        if reason is not None:
            state.stop_reason = reason
            return None
        last = state.turns[-1] if state.turns else None
        return state.seats_with_role(ACTOR if last is None or last.role == SKEPTIC else SKEPTIC)

    def visible(self, view: SeatView) -> list[Seen]:
        other_role = SKEPTIC if view.seat.role == ACTOR else ACTOR
        other = next(s.name for s in view.config.seats if s.role == other_role)
        return [s for s in (view.latest(view.seat.name), view.latest(other)) if s is not None]

    def instruction(self, view: SeatView) -> str:
        if view.seat.role == SKEPTIC:
            return prompts.render("debate/skeptic_turn", history=view.history(self.visible(view)))
        if view.own_round == 1:
            return prompts.load("debate/turn_first")
        return prompts.render("debate/actor_later", round=view.own_round, history=view.history(self.visible(view)))

    def system_prompt(self, seat: SeatConfig, config: DebateConfig, taxonomy: Taxonomy) -> str:
        if seat.role == SKEPTIC:
            return prompts.render("debate/skeptic_system", framing=self.framing(config))
        return render_prompt("debate/actor_system", framing=self.framing(config), answer_format=self.answer_format(taxonomy))

    def answers_required(self, seat: SeatConfig, config: DebateConfig) -> bool:
        return seat.role == ACTOR

    def turn_grammar(self, seat: SeatConfig, config: DebateConfig, taxonomy: Taxonomy) -> Grammar | None:
        if seat.role == SKEPTIC:
            return prose_or(NO_OBJECTIONS)
        return super().turn_grammar(seat, config, taxonomy)

    def decide(self, state: DebateState) -> DebateOutcome:
        return single_answer(state, state.seats_with_role(ACTOR)[0], ACTOR)

    def confidence(self, state: DebateState, decision: DebateOutcome) -> float:
        return stated_or_one(state, state.seats_with_role(ACTOR)[0])
