"""Diagnostics are typed per strategy, and rows written before they were typed still load."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from m3d_agents.diagnostics import DIAGNOSTICS, StrategyDiagnostics, UntypedDiagnostics
from debates.strategies.agentfact.diagnostics import AgentFactDiagnostics
from debates.strategies.check import CheckDiagnostics
from debates.debate_engine.diagnostics import DebateDiagnostics
from debates.strategies.factguard.diagnostics import FactGuardDiagnostics
from debates.strategies.self_consistency import SelfConsistencyDiagnostics
from debates.strategies.t2agent.diagnostics import T2AgentDiagnostics
from m3d_agents.verdict import Verdict
from tests.support.old_diagnostics import OLD_AGENTFACT, OLD_CHECK, OLD_DEBATE, OLD_FACTGUARD, OLD_SELF_CONSISTENCY, OLD_T2AGENT


@pytest.mark.parametrize(("old", "model"), [
    (OLD_DEBATE, DebateDiagnostics), (OLD_CHECK, CheckDiagnostics), (OLD_SELF_CONSISTENCY, SelfConsistencyDiagnostics),
    (OLD_FACTGUARD, FactGuardDiagnostics), (OLD_AGENTFACT, AgentFactDiagnostics), (OLD_T2AGENT, T2AgentDiagnostics),
])
def test_an_old_dictionary_is_read_into_its_strategys_model(old: dict[str, Any], model: type[StrategyDiagnostics]) -> None:
    verdict = Verdict(sample_id="s", label="fake", diagnostics=old)
    assert type(verdict.diagnostics) is model
    assert verdict.diagnostics.wall_time_s == old["wall_time_s"]
    again = Verdict.model_validate_json(verdict.model_dump_json())
    assert again.diagnostics == verdict.diagnostics, "written with its strategy's name, read back the same"


def test_fields_not_keys_an_old_debate_row_reads_like_a_new_one() -> None:
    diagnostics = DIAGNOSTICS.validate_python(OLD_DEBATE)
    assert isinstance(diagnostics, DebateDiagnostics)
    assert diagnostics.decided_by == "consensus" and diagnostics.answer.label == "fake"
    assert diagnostics.selection.best_of_n_turns[0].scores[0].u == 0.5
    assert diagnostics.selection.saved_calls.total == 1 and diagnostics.image_descriptions == ["OCR: no text"]


def test_an_old_dictionary_that_fits_no_model_is_kept_untyped_with_its_common_fields() -> None:
    odd = {"attempts": "three", "wall_time_s": 1.5, "stop_reason": "gave up", "note": "from an early version"}
    diagnostics = DIAGNOSTICS.validate_python(odd)
    assert isinstance(diagnostics, UntypedDiagnostics)
    assert diagnostics.source == "check", "its keys say which writer it came from"
    assert (diagnostics.wall_time_s, diagnostics.stop_reason, diagnostics.data) == (1.5, "gave up", odd)
    unknown = DIAGNOSTICS.validate_python({"something": 1})
    assert isinstance(unknown, UntypedDiagnostics) and unknown.source == "unknown" and unknown.data == {"something": 1}


def test_a_plug_in_strategys_own_model_is_kept_untyped() -> None:
    class Mine(StrategyDiagnostics):
        strategy: str = "mine"
        hops: int = 3

    verdict = Verdict(sample_id="s", label="real", diagnostics=Mine(wall_time_s=0.5))
    assert isinstance(verdict.diagnostics, UntypedDiagnostics)
    assert verdict.diagnostics.source == "mine" and verdict.diagnostics.data["hops"] == 3
    assert Verdict.model_validate_json(verdict.model_dump_json()).diagnostics == verdict.diagnostics


def test_todays_diagnostics_must_fit_their_model() -> None:
    with pytest.raises(ValidationError, match="attempts"):
        Verdict(sample_id="s", label="fake", diagnostics={"strategy": "check"})
    with pytest.raises(ValidationError, match="extra"):
        Verdict(sample_id="s", label="fake", diagnostics={"strategy": "check", "attempts": 1, "typo": 2})
