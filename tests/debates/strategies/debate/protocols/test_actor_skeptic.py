"""The actor-skeptic protocol on hand-built state."""

from __future__ import annotations

from tests.support.protocols import debate, says, seen, view_of


def test_actor_and_skeptic_alternate_ending_on_the_actor() -> None:
    state = debate("actor-skeptic", max_rounds=2)
    order = []
    for text in [says("fake"), "Why fake?", says("real")]:
        speakers = state.protocol.next_speakers(state)
        assert speakers is not None
        order += speakers
        state.record(speakers[0], text)
    assert order == ["actor", "skeptic", "actor"]
    assert state.protocol.next_speakers(state) is None and state.stop_reason == "maximum of 2 rounds reached"


def test_the_skeptic_saying_no_objections_ends_it_and_only_the_actor_counts() -> None:
    state = debate("actor-skeptic", ("actor", says("fake", confidence=0.7)), ("skeptic", "NO OBJECTIONS"))
    assert state.protocol.next_speakers(state) is None
    assert state.stop_reason == "the skeptic had no objections after round 1"
    decision = state.protocol.decide(state)
    assert (decision.label, decision.decided_by) == ("fake", "actor")
    assert state.protocol.confidence(state, decision) == 0.7


def test_each_sees_the_others_latest_message() -> None:
    state = debate("actor-skeptic", ("actor", says("fake", "A1")), ("skeptic", "S1"), ("actor", says("real", "A2")))
    assert seen(view_of(state, "skeptic")) == [("skeptic", 1), ("actor", 2)]
    assert seen(view_of(state, "actor")) == [("actor", 2), ("skeptic", 1)]


def test_no_objections_inside_a_longer_message_does_not_end_the_debate() -> None:
    question = "I have no objections to the date, but who is the man on the left?"
    state = debate("actor-skeptic", ("actor", says("fake")), ("skeptic", question))
    assert state.protocol.next_speakers(state) == ["actor"]
    for alone in ("No objections.", "**NO OBJECTIONS**", "  no objections \n"):
        ended = debate("actor-skeptic", ("actor", says("fake")), ("skeptic", alone))
        assert ended.protocol.next_speakers(ended) is None, alone
