"""Explanations in the verdict: every cited id names evidence the verdict carries, and the review export."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from m3d_agents.evidence import Evidence
from m3d_agents.verdict import Explanation, KeyPoint, Verdict

E1 = Evidence(kind="web_page", url="https://www.reuters.com/world/a", reliability="reliable", text="the bridge opened in 2020")
E2 = Evidence(kind="corpus", text="the mayor denied it", title="Statement")


def explained(*cited: str, evidence_ids: list[str] | None = None) -> Verdict:
    return Verdict(
        sample_id="s1", taxonomy="factcheck", label="false", evidence=[E1, E2],
        evidence_ids=evidence_ids if evidence_ids is not None else [E1.id, E2.id],
        explanation=Explanation(
            claim_understanding="the claim says the bridge closed", reasoning_logic="a reliable report refutes it",
            key_points=[KeyPoint(text="Reuters reports the bridge open", evidence_ids=list(cited))],
            confidence_level=4, label_2class="false", display_ids={E1.id: "E1", E2.id: "E2"},
            image_analysis=["[I1] no related image found"],
        ),
    )


def test_a_key_point_citing_an_absent_id_is_rejected() -> None:
    with pytest.raises(ValidationError, match="cites"):
        explained("ev-missing")
    with pytest.raises(ValidationError, match="name no item"):
        explained(E1.id, evidence_ids=[E1.id, "ev-elsewhere"])
    with pytest.raises(ValidationError, match="not in evidence_ids"):
        explained(E2.id, evidence_ids=[E1.id])


def test_an_explained_verdict_survives_a_json_round_trip() -> None:
    verdict = explained(E1.id, E2.id)
    again = Verdict.model_validate_json(verdict.model_dump_json())
    assert again == verdict
    assert again.explanation is not None and again.explanation.cited_ids() == [E1.id, E2.id]


def test_verdicts_without_evidence_objects_keep_their_old_shape() -> None:
    assert Verdict(sample_id="s", label="real", evidence_ids=["ev-x"]).evidence == []


def test_the_review_export_has_exactly_the_six_review_fields_and_shows_the_agents_ids() -> None:
    record = explained(E1.id).review_record().model_dump()
    assert set(record) == {
        "predicted_authenticity_class", "predicted_authenticity_reasons", "predicted_authenticity_key_points",
        "evidence_list", "image_analysis_result", "confidence_level",
    }
    assert record["predicted_authenticity_class"] == "false"
    assert record["predicted_authenticity_key_points"] == [{"key_point": "Reuters reports the bridge open", "evidence_ids": ["E1"]}]
    assert [e["id"] for e in record["evidence_list"]] == ["E1", "E2"]
    assert record["evidence_list"][0]["source"] == "https://www.reuters.com/world/a"
    assert record["confidence_level"] == 4
