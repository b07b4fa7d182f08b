"""The async protocol on hand-built state: turn order, who sees what, the outcome."""

from __future__ import annotations

from debates.debate_engine.protocol import PROTOCOLS
from tests.support.protocols import debate, says, seen, view_of


def test_debaters_speak_one_at_a_time_in_seat_order_each_round() -> None:
    state = debate("async-three")
    order = []
    for text in [says("fake"), says("real"), says("fake"), says("real"), says("fake"), says("real")]:
        speakers = state.protocol.next_speakers(state)
        assert speakers is not None and len(speakers) == 1
        order.append(speakers[0])
        state.record(speakers[0], text)
    assert order == ["agent_a", "agent_b", "agent_c", "agent_a", "agent_b", "agent_c"]


def test_consensus_after_a_complete_round_stops_the_debate() -> None:
    state = debate("async-three", ("agent_a", says("fake")), ("agent_b", says("fake")))
    assert state.protocol.next_speakers(state) == ["agent_c"], "a round is complete only when every debater spoke"
    state.record("agent_c", says("fake"))
    assert state.protocol.next_speakers(state) is None
    assert state.stop_reason == "consensus after round 1"


def test_max_rounds_then_majority_decides_and_a_tie_abstains() -> None:
    labels = ["fake", "real", "fake"]
    state = debate("async-three", *[(f"agent_{c}", says(lab)) for c, lab in zip("abc", labels)], max_rounds=1)
    assert state.protocol.next_speakers(state) is None
    assert state.stop_reason == "maximum of 1 rounds reached"
    decision = state.protocol.decide(state)
    assert (decision.label, decision.decided_by) == ("fake", "majority")
    assert state.protocol.confidence(state, decision) == round(2 / 3, 4)
    tie = debate("async-three", ("agent_a", says("fake")), ("agent_b", says("real")), ("agent_c", "no answer here"), max_rounds=1)
    assert tie.protocol.decide(tie).label is None


def test_first_round_is_independent_then_everyone_sees_the_latest_answers() -> None:
    state = debate("async-three", ("agent_a", says("fake", "A1")), ("agent_b", says("real", "B1")))
    assert seen(view_of(state, "agent_c")) == [], "nobody sees another's first answer"
    state.record("agent_c", says("real", "C1"))
    state.record("agent_a", says("real", "A2"))
    assert seen(view_of(state, "agent_b")) == [("agent_b", 1), ("agent_a", 2), ("agent_c", 1)]


def test_stated_confidence_scales_agreement() -> None:
    state = debate("async-three", ("agent_a", says("fake", confidence=0.5)), ("agent_b", says("fake", confidence=0.7)),
                   ("agent_c", says("fake")))
    decision = state.protocol.decide(state)
    assert decision.decided_by == "consensus" and state.protocol.confidence(state, decision) == 0.6


def test_a_judge_decides_when_asked_for_and_sees_only_the_debaters() -> None:
    from debates.debate_engine.config import SeatConfig
    from debates.config_loader import load_config

    config = load_config("async-three").model_copy(deep=True)
    config.seats.append(SeatConfig(name="judge", role="judge"))
    config = config.model_copy(update={"on_no_consensus": "judge", "max_rounds": 1})
    state = debate(config, ("agent_a", says("fake")), ("agent_b", says("real")), ("agent_c", says("real")))
    assert state.protocol.next_speakers(state) == ["judge"]
    assert seen(view_of(state, "judge")) == [("agent_a", 1), ("agent_b", 1), ("agent_c", 1)]
    state.record("judge", says("fake", confidence=0.9))
    assert state.protocol.next_speakers(state) is None
    decision = state.protocol.decide(state)
    assert (decision.label, decision.decided_by) == ("fake", "judge")
    assert PROTOCOLS.get("async").confidence(state, decision) == 0.9


def test_consensus_reached_in_the_middle_of_a_round_reports_that_round() -> None:
    state = debate(
        "async-three",
        ("agent_a", says("real")), ("agent_b", says("fake")), ("agent_c", says("fake")),
        ("agent_a", says("fake")),
    )
    assert state.protocol.next_speakers(state) is None, "every latest answer agrees: the debate stops mid-round"
    assert state.stop_reason == "consensus in round 2, before every debater had spoken in it"
    diagnostics = state.diagnostics("fake")
    assert diagnostics.consensus_round == 2
    assert diagnostics.rounds == 2


def test_a_majority_needs_a_quorum_of_readable_votes_and_says_when_it_has_none() -> None:
    """The audit's case: one readable vote of two decided the debate as a "majority"."""
    state = debate("async", ("agent_a", says("fake")), ("agent_b", "I could not make up my mind."), max_rounds=1)
    assert state.protocol.next_speakers(state) is None
    decision = state.protocol.decide(state)
    assert decision.label is None
    assert "no quorum" in decision.decided_by and "1 of 2 deciders gave a readable answer" in decision.decided_by
    three = debate("async-three", ("agent_a", says("fake")), ("agent_b", says("fake")), ("agent_c", "no answer"), max_rounds=1)
    assert three.protocol.decide(three).label == "fake", "two readable of three is a quorum"
    lone = debate("async-three", ("agent_a", says("fake")), ("agent_b", "no"), ("agent_c", "no answer"), max_rounds=1)
    assert lone.protocol.decide(lone).label is None
    lenient = debate("async", ("agent_a", says("fake")), ("agent_b", "undecided"), max_rounds=1, majority_quorum=0.4)
    assert lenient.protocol.decide(lenient).label == "fake", "the quorum is a setting"
