"""The judged protocol on hand-built state: stances, no early stop, a judge who decides without evidence."""

from __future__ import annotations

import pytest

from debates.debate_engine.config import DebateConfig
from debates.config_loader import load_config
from m3d_agents.evidence import Evidence
from m3d_agents.media.images import prepare_sample
from m3d_agents.sample import Sample
from tests.support.protocols import debate, says, seen, view_of


def test_debaters_argue_all_rounds_even_when_they_agree_then_the_judge_decides() -> None:
    state = debate("judged", ("prosecutor", says("fake")), ("defender", says("fake")))
    assert state.protocol.next_speakers(state) == ["prosecutor"], "agreement does not end a judged debate"
    state.record("prosecutor", "more argument")
    state.record("defender", "more argument")
    assert state.protocol.next_speakers(state) == ["judge"]
    state.record("judge", says("real", confidence=0.8))
    assert state.protocol.next_speakers(state) is None
    assert state.stop_reason == "maximum of 2 rounds reached; the judge decided"
    decision = state.protocol.decide(state)
    assert (decision.label, decision.decided_by) == ("real", "judge")
    assert state.protocol.confidence(state, decision) == 0.8


def test_only_the_judge_must_give_an_answer_line() -> None:
    config = load_config("judged")
    assert isinstance(config, DebateConfig)
    protocol = debate(config).protocol
    assert [protocol.answers_required(s, config) for s in config.seats] == [False, False, True]


def test_the_judge_sees_the_transcript_but_never_the_evidence_or_the_image() -> None:
    state = debate("judged", ("prosecutor", "P1"), ("defender", "D1"), ("prosecutor", "P2"), ("defender", "D2"))
    assert seen(view_of(state, "judge")) == [("prosecutor", 1), ("defender", 1), ("prosecutor", 2), ("defender", 2)]
    config = state.config
    judge = config.seat("judge")
    prepared = prepare_sample(Sample(text="a claim"))
    block = state.protocol.post_block(judge, prepared, [Evidence(kind="web_page", text="SECRET-EVIDENCE")], vision=True)
    assert "SECRET-EVIDENCE" not in block and "a claim" in block
    assert not state.protocol.sees_images(judge)
    debater_block = state.protocol.post_block(config.seat("prosecutor"), prepared, [Evidence(kind="web_page", text="SECRET-EVIDENCE")], True)
    assert "SECRET-EVIDENCE" in debater_block


def test_a_judged_debate_needs_one_judge_and_stances() -> None:
    base = load_config("judged").model_dump()
    base["seats"] = base["seats"][:2]
    base["on_no_consensus"] = "majority"
    with pytest.raises(ValueError, match="exactly one judge"):
        DebateConfig.model_validate(base)


def test_judged_debaters_are_asked_for_their_case_never_for_agreement_or_an_answer() -> None:
    """The base turn prompts ask for an independent view, "do you agree with me?" and an answer line,
    which a debater who must keep its assigned stance and leave the decision to the judge cannot give."""
    state = debate("judged", ("prosecutor", "P1"), ("defender", "D1"))
    first = " ".join(view_of(debate("judged"), "prosecutor").instruction().split())
    later = " ".join(view_of(state, "defender").instruction().split())
    for prompt in (first, later):
        assert "assigned position" in prompt and "do not write a final answer line" in prompt.lower()
        assert "independent" not in prompt and "Do you agree" not in prompt and "give your answer" not in prompt
    assert "P1" in later and "D1" in later and "Do not change sides" in later
    judge = view_of(debate("judged", ("prosecutor", "P1"), ("defender", "D1"), ("prosecutor", "P2"), ("defender", "D2")), "judge")
    assert judge.instruction().endswith("Decide now.")
