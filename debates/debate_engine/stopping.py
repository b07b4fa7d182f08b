"""When a debate ends: stop rules as small objects that compose, as AutoGen's termination conditions do.

AutoGen ends a team with ``MaxMessageTermination(10) | TextMentionTermination("DONE")``; a debate
ends the same way, with rules that read the whole state (every decider's latest answer, whole
rounds), which a termination condition that sees only the last speakers' messages cannot. ``a | b``
ends the debate when either rule does, with the first one's reason; ``a & b`` when both do, with
both reasons. A protocol names its rule (``stops``) and asks it before choosing who speaks next, so
"at most ``max_rounds`` rounds" is written once, here, not in every protocol's turn order.
"""

from __future__ import annotations

from dataclasses import dataclass

from debates.debate_engine.state import DebateState


class StopRule:
    """A reason for the debate to end now, or None while it goes on."""

    def reason(self, state: DebateState) -> str | None:
        raise NotImplementedError

    def __or__(self, other: StopRule) -> StopRule:
        return AnyOf((self, other))

    def __and__(self, other: StopRule) -> StopRule:
        return AllOf((self, other))


@dataclass(frozen=True)
class AnyOf(StopRule):
    """Ends when any of ``rules`` does, with the first one's reason (in the order given)."""

    rules: tuple[StopRule, ...]

    def reason(self, state: DebateState) -> str | None:
        for rule in self.rules:
            found = rule.reason(state)
            if found is not None:
                return found
        return None

    def __or__(self, other: StopRule) -> StopRule:
        return AnyOf((*self.rules, other))


@dataclass(frozen=True)
class AllOf(StopRule):
    """Ends when every one of ``rules`` does, with their reasons joined."""

    rules: tuple[StopRule, ...]

    def reason(self, state: DebateState) -> str | None:
        found = [rule.reason(state) for rule in self.rules]
        return "; ".join(r for r in found if r is not None) if all(r is not None for r in found) else None

    def __and__(self, other: StopRule) -> StopRule:
        return AllOf((*self.rules, other))


@dataclass(frozen=True)
class MaxRounds(StopRule):
    """Every decider has spoken in ``max_rounds`` rounds (the configuration's); with ``after``, only once a seat of
    that role has just spoken (an actor-skeptic debate ends on the actor's turn)."""

    after: str | None = None

    def reason(self, state: DebateState) -> str | None:
        limit = state.config.max_rounds
        if self.after is not None and (not state.turns or state.turns[-1].role != self.after):
            return None
        return f"maximum of {limit} rounds reached" if state.completed_rounds() >= limit else None


@dataclass(frozen=True)
class Consensus(StopRule):
    """Every decider's latest answer agrees, once every decider has answered."""

    def reason(self, state: DebateState) -> str | None:
        if state.completed_rounds() >= 1 and state.consensus() is not None:
            return consensus_reason(state)
        return None


@dataclass(frozen=True)
class FinalAnswer(StopRule):
    """The seat of ``role`` has spoken, and its answer is final, whoever sits in it (a model or a person): a
    judge's decision, a single classifier's answer. ``said`` is the reason."""

    role: str
    said: str

    def reason(self, state: DebateState) -> str | None:
        seats = state.seats_with_role(self.role)
        return self.said if seats and state.rounds_of(seats[0]) > 0 else None


def consensus_reason(state: DebateState) -> str:
    """The stop reason of a consensus, naming the round it was reached in, complete or not."""
    turn = state.consensus_turn()
    reached = turn.round if turn is not None else state.current_round()
    if state.completed_rounds() >= reached:
        return f"consensus after round {reached}"
    return f"consensus in round {reached}, before every debater had spoken in it"
