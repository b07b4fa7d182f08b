"""The sync protocol on hand-built state: concurrent rounds that see only the previous round."""

from __future__ import annotations

from tests.support.protocols import debate, says, seen, view_of


def test_everyone_speaks_at_once_each_round() -> None:
    state = debate("sync-three")
    assert state.protocol.next_speakers(state) == ["agent_a", "agent_b", "agent_c"]


def test_a_debater_sees_the_previous_round_only() -> None:
    state = debate("sync-three", ("agent_a", says("fake", "A1")), ("agent_b", says("real", "B1")), ("agent_c", says("real", "C1")),
                   ("agent_a", says("real", "A2")))
    assert seen(view_of(state, "agent_b")) == [("agent_b", 1), ("agent_a", 1), ("agent_c", 1)], "agent_a's round-2 answer is hidden"


def test_consensus_stops_after_the_round_and_max_rounds_bounds_it() -> None:
    agreed = debate("sync-three", *[(f"agent_{c}", says("fake")) for c in "abc"])
    assert agreed.protocol.next_speakers(agreed) is None and agreed.stop_reason == "consensus after round 1"
    split = debate("sync-three", *[(f"agent_{c}", says(lab)) for c, lab in zip("abc", ["fake", "real", "real"])], max_rounds=1)
    assert split.protocol.next_speakers(split) is None and split.stop_reason == "maximum of 1 rounds reached"
    assert split.protocol.decide(split).label == "real"


def test_answers_that_swap_sides_within_a_round_are_no_consensus() -> None:
    """Round 2 swaps (real, fake) to (fake, real): after agent_a's round-2 answer both latest answers
    say fake, but agent_b had not read it; the debate agrees only at the end of round 3."""
    rounds = [("real", "fake"), ("fake", "real"), ("fake", "fake")]
    turns = [(seat, says(label)) for pair in rounds for seat, label in zip(("agent_a", "agent_b"), pair)]
    for name in ("sync", "disambiguation-sync"):
        state = debate(name, *turns)
        assert state.protocol.next_speakers(state) is None
        assert state.stop_reason == "consensus after round 3", name
        assert state.diagnostics("fake").consensus_round == 3


def test_a_debate_that_ends_split_has_no_consensus_round() -> None:
    rounds = [("real", "fake"), ("fake", "real"), ("real", "fake")]
    turns = [(seat, says(label)) for pair in rounds for seat, label in zip(("agent_a", "agent_b"), pair)]
    for name in ("sync", "async"):
        state = debate(name, *turns)
        assert state.consensus_turn() is None and state.diagnostics(None).consensus_round is None, name
