"""Speaker policies: given the debate so far, who speaks next, or None when the debate is over.

Each policy is a plain function of :class:`DebateState`, so its turn order can be tested without
any model, and the manager stays a thin adapter to AutoGen.
"""

from __future__ import annotations

from typing import Callable

from debates.protocols.cascade import CHECKS, distortion_label
from debates.chat.state import DESK_NAME, NO_OBJECTIONS, DebateState

SpeakerPolicy = Callable[[DebateState], list[str] | None]


def _judge(state: DebateState) -> str | None:
    judges = [s.name for s in state.config.seats if s.role == "judge"]
    return judges[0] if judges else None


def _close(state: DebateState, reason: str) -> list[str] | None:
    """After the debaters are done: hand over to the judge if the rule says so, else stop."""
    judge = _judge(state)
    needs_judge = state.config.protocol == "judged" or (
        state.config.on_no_consensus == "judge" and state.consensus() is None
    )
    if judge is not None and needs_judge and state.rounds_of(judge) == 0:
        return [judge]
    if judge is not None and state.rounds_of(judge) > 0:
        state.stop_reason = f"{reason}; the judge decided"
    else:
        state.stop_reason = reason
    return None


def _consensus_reached(state: DebateState) -> bool:
    return state.config.protocol != "judged" and state.completed_rounds() >= 1 and state.consensus() is not None


def round_robin(state: DebateState) -> list[str] | None:
    """``async`` and ``judged``: debaters speak one at a time, in seat order, once per round."""
    debaters = [s.name for s in state.config.seats if s.role == "debater"]
    if _consensus_reached(state):
        return _close(state, f"consensus after round {state.completed_rounds()}")
    behind = [name for name in debaters if state.rounds_of(name) < state.config.max_rounds]
    if not behind:
        return _close(state, f"maximum of {state.config.max_rounds} rounds reached")
    fewest = min(state.rounds_of(name) for name in behind)
    return [next(name for name in behind if state.rounds_of(name) == fewest)]


def all_at_once(state: DebateState) -> list[str] | None:
    """``sync``: every debater answers concurrently, once per round."""
    debaters = [s.name for s in state.config.seats if s.role == "debater"]
    if _consensus_reached(state):
        return _close(state, f"consensus after round {state.completed_rounds()}")
    if state.completed_rounds() >= state.config.max_rounds:
        return _close(state, f"maximum of {state.config.max_rounds} rounds reached")
    return debaters


def with_retrieval(state: DebateState) -> list[str] | None:
    """``disambiguation``: a concurrent round of debaters, then the retrieval desk if anyone asked."""
    last = state.turns[-1].speaker if state.turns else None
    if last is not None and last != DESK_NAME and state.pending_queries():
        if not _consensus_reached(state) and state.completed_rounds() < state.config.max_rounds:
            return [DESK_NAME]
    return all_at_once(state)


def actor_then_skeptic(state: DebateState) -> list[str] | None:
    """``actor_skeptic``: actor, skeptic, actor, ... ending on the actor; stops early if the skeptic is satisfied."""
    actor = next(s.name for s in state.config.seats if s.role == "actor")
    skeptic = next(s.name for s in state.config.seats if s.role == "skeptic")
    last = state.turns[-1] if state.turns else None
    if last is not None and last.speaker == skeptic and NO_OBJECTIONS in last.text.upper():
        state.stop_reason = f"the skeptic had no objections after round {state.rounds_of(actor)}"
        return None
    if last is None or last.speaker == skeptic:
        return [actor]
    if state.rounds_of(actor) >= state.config.max_rounds:
        state.stop_reason = f"maximum of {state.config.max_rounds} rounds reached"
        return None
    return [skeptic]


def cascade(state: DebateState) -> list[str] | None:
    """``cascade`` (AgentM3D eq. 9): text, then image, then cross-modal; the first distortion ends the chat.

    A modality agent speaks only when every agent before it found no distortion. An unreadable
    answer also ends the chat: whether that modality is distorted is unknown, so asking the next
    agent could only produce a label the evidence does not support.
    """
    for seat in state.config.seats:
        turn = state.latest(seat.name)
        if turn is None:
            return [seat.name]
        title = CHECKS[seat.role].title
        if turn.reading.action is None:
            state.stop_reason = f"the {title} answer could not be read"
            return None
        if distortion_label(seat.role, turn.reading.action) is not None:
            state.stop_reason = f"the {title} check found a distortion ({turn.reading.action})"
            return None
    state.stop_reason = "no modality found a distortion"
    return None


def single_answer(state: DebateState) -> list[str] | None:
    """``standard``: the one seat answers once."""
    seat = state.config.seats[0].name
    if state.rounds_of(seat) == 0:
        return [seat]
    state.stop_reason = "single answer given"
    return None


POLICIES: dict[str, SpeakerPolicy] = {
    "cascade": cascade,
    "standard": single_answer,
    "async": round_robin,
    "judged": round_robin,
    "sync": all_at_once,
    "disambiguation": with_retrieval,
    "actor_skeptic": actor_then_skeptic,
}
