"""The standard protocol on hand-built state: one seat, one answer."""

from __future__ import annotations

import pytest

from debates.debate_engine.config import DebateConfig
from debates.config_loader import load_config
from tests.support.protocols import debate, says, seen, view_of


def test_one_answer_then_stop() -> None:
    state = debate("standard", taxonomy="m3d")
    assert state.protocol.next_speakers(state) == ["classifier"]
    state.record("classifier", says("original", confidence=0.4))
    assert state.protocol.next_speakers(state) is None and state.stop_reason == "single answer given"
    decision = state.protocol.decide(state)
    assert (decision.label, decision.decided_by) == ("original", "single")
    assert state.protocol.confidence(state, decision) == 0.4
    assert seen(view_of(state, "classifier")) == []


def test_an_unreadable_answer_is_no_decision() -> None:
    state = debate("standard", ("classifier", "I cannot tell"), taxonomy="m3d")
    decision = state.protocol.decide(state)
    assert decision.label is None and "could not be read" in decision.decided_by


def test_exactly_one_single_seat() -> None:
    base = load_config("standard").model_dump()
    base["seats"].append({"name": "other", "role": "single"})
    with pytest.raises(ValueError, match="exactly one seat of role single"):
        DebateConfig.model_validate(base)
