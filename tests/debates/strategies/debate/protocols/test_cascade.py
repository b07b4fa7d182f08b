"""The cascade protocol on hand-built state: gating by the first distortion, eq. 9, per-modality findings."""

from __future__ import annotations

from tests.support.protocols import debate, seen, view_of


def finish(action: str, confidence: float = 0.8) -> str:
    return f"Checked.\nFinish[{action}]\nCONFIDENCE: {confidence}"


def test_agents_speak_in_cascade_order_until_the_first_distortion() -> None:
    state = debate("mmd-agent-decoupled", taxonomy="m3d")
    assert state.protocol.next_speakers(state) == ["text_agent"]
    state.record("text_agent", finish("TEXT SUPPORT"))
    assert state.protocol.next_speakers(state) == ["image_agent"]
    state.record("image_agent", finish("IMAGE REFUTE", 0.6))
    assert state.protocol.next_speakers(state) is None
    assert state.stop_reason == "the image veracity check found a distortion (IMAGE REFUTE)"
    decision = state.protocol.decide(state)
    assert (decision.label, decision.decided_by) == ("visual_veracity_distortion", "cascade")
    assert state.protocol.confidence(state, decision) == 0.6
    assert [(f.modality, f.distortion) for f in state.protocol.findings(state)] == [("text", False), ("image", True)]


def test_all_clear_is_original_with_the_lowest_confidence() -> None:
    state = debate("mmd-agent-decoupled", ("text_agent", finish("TEXT SUPPORT", 0.9)), ("image_agent", finish("IMAGE SUPPORT", 0.7)),
                   ("cross_modal_agent", finish("MATCH", 0.8)), taxonomy="m3d")
    assert state.protocol.next_speakers(state) is None and state.stop_reason == "no modality found a distortion"
    decision = state.protocol.decide(state)
    assert decision.label == "original" and state.protocol.confidence(state, decision) == 0.7


def test_an_unreadable_answer_ends_the_chat_without_a_label() -> None:
    state = debate("mmd-agent-decoupled", ("text_agent", "Finish[MATCH]"), taxonomy="m3d")
    assert state.protocol.next_speakers(state) is None and "could not be read" in state.stop_reason
    assert state.protocol.decide(state).label is None


def test_agents_see_nobody_else_and_always_answer_in_m3d() -> None:
    state = debate("mmd-agent-decoupled", ("text_agent", finish("TEXT SUPPORT")), taxonomy="m3d")
    assert seen(view_of(state, "image_agent")) == []
    assert state.protocol.answer_taxonomy(state.config, "binary") == "m3d"
