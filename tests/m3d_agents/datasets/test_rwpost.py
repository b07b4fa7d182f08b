"""RW-Post in both released schemas: inputs, images, labels, claim dates, and the gold evidence kept apart."""

from __future__ import annotations

from datetime import date

from m3d_agents.datasets import load_dataset
from m3d_agents.datasets.rwpost import gold_evidence
from tests.support.paths import REPO

FIXTURES = REPO / "tests" / "fixtures" / "datasets" / "AgentFact"
MAIN = FIXTURES / "RW_Post_dataset" / "rwpost_dev_main.jsonl"
OTHER = FIXTURES / "RW_Post_dataset" / "rwpost_dev_other_labels.jsonl"
NESTED = FIXTURES / "Dataset_RW-Post" / "demo" / "demo.jsonl"


def test_flat_rows_load_with_their_images_from_the_files_folder() -> None:
    loaded = load_dataset(f"rwpost:{MAIN}")
    first, second, third = loaded.samples
    assert [s.gold_label for s in loaded.samples] == ["false", "true", "unproven"]
    assert first.text.startswith("Claim: A photograph shows the Harbour Street") and "Post: Shocking!" in first.text
    assert first.images == [MAIN.parent / "post_images" / "split_data_1" / "1.jpg"]
    assert second.images[0].name == "2.jpg" and third.images == []
    assert third.text == "A retired teacher found a meteorite in her garden in Yorkshire."
    assert loaded.report.labels == {"false": 1, "true": 1, "unproven": 1}


def test_nested_rows_still_load_with_their_images() -> None:
    loaded = load_dataset(f"rwpost:{NESTED}")
    assert loaded.samples[0].images[0].name == "demo_0.jpg"
    assert [s.gold_label for s in loaded.samples] == ["true", "false", "mixture"]


def test_satire_is_skipped_and_counted_without_an_error() -> None:
    loaded = load_dataset(f"rwpost:{OTHER}")
    assert [s.gold_label for s in loaded.samples] == ["mixture", "outdated"]
    assert loaded.report.skipped == {"label 'SATIRE' has no mapping onto the chosen taxonomy": 1}
    assert loaded.report.labels == {"mixture": 1, "outdated": 1}


def test_claims_are_dated_as_the_data_set_gives_them_unless_asked_for_the_start_of_the_month() -> None:
    assert load_dataset(f"rwpost:{MAIN}").samples[0].metadata.claim_date == date(2023, 5, 31), "claim_time as written"
    month_start = load_dataset(f"rwpost:{MAIN}", {"claim_date_policy": "month_start"})
    assert month_start.samples[0].metadata.claim_date == date(2023, 5, 1)


def test_ocr_joins_the_text_only_when_asked() -> None:
    assert "BREAKING" not in load_dataset(f"rwpost:{MAIN}").samples[0].text
    assert load_dataset(f"rwpost:{MAIN}", {"with_ocr": "true"}).samples[0].text.endswith("Text in the post image: BREAKING")


def test_no_fact_check_link_and_no_gold_evidence_reaches_a_sample() -> None:
    for path in (MAIN, OTHER, NESTED):
        loaded = load_dataset(f"rwpost:{path}")
        gold_texts = [e.text for items in loaded.gold_evidence.values() for e in items]
        for sample in loaded.samples:
            dumped = sample.model_dump_json().lower()
            assert "snopes" not in dumped
            assert not any(text.lower() in dumped for text in gold_texts)


def test_gold_evidence_ids_follow_the_schema_and_clean_urls() -> None:
    flat = gold_evidence(MAIN)["rwpost-0"]
    assert [e.id for e in flat] == ["E1", "E2", "E3"]
    assert flat[0].url == "https://harbourton.gov.example/news/footbridge-opens" and flat[0].domain == "harbourton.gov.example"
    assert flat[2].url is None and flat[2].title == "Snopes · Text"
    assert all(e.kind == "corpus" and e.reason == "RW-Post ground-truth evidence" for e in flat)
    nested = gold_evidence(NESTED)["rwpost-0"]
    assert [e.id for e in nested] == ["E1", "E2", "E3"] and nested[1].url is None
    assert load_dataset(f"rwpost:{MAIN}").gold_evidence["rwpost-0"] == flat
