"""The ClaimReview2024+ loader on a file in the released format (our own three claims; the data set is gated)."""

from __future__ import annotations

import json
import shutil
from datetime import date
from pathlib import Path

import pytest

from m3d_agents.datasets import load_dataset
from m3d_agents.errors import InputError
from tests.support.paths import REPO

IMAGE = REPO / "tests" / "fixtures" / "datasets" / "AgentFact" / "RW_Post_dataset" / "post_images" / "split_data_1" / "1.jpg"


def release(folder: Path, **extra: object) -> Path:
    (folder / "images").mkdir(parents=True)
    shutil.copy(IMAGE, folder / "images" / "claim_0.jpg")
    rows = [
        {"text": "A photo shows a footbridge collapsing on its opening day.", "image": ["images/claim_0.jpg"],
         "label": "refuted", "date": "2024-01-31T00:00:00Z", "author": "a post"},
        {"text": "The town council voted to extend the ferry timetable.", "image": [], "label": "supported",
         "date": "2023-12-05T00:00:00Z", "author": "a councillor"},
        {"text": "A lighthouse was painted in football colours.", "image": [], "label": "not enough information",
         "date": "2024-02-10T00:00:00Z", "author": "a page"},
        {"text": "Bus fares doubled last year.", "image": [], "label": "misleading", "date": "2024-03-01T00:00:00Z",
         "author": "a poster", **extra},
    ]
    path = folder / "test.json"
    path.write_text(json.dumps(rows))
    return path


def test_claims_load_with_their_images_dates_and_three_class_labels(tmp_path: Path) -> None:
    loaded = load_dataset(f"claimreview2024:{release(tmp_path)}")
    assert [s.gold_label for s in loaded.samples] == ["false", "true", "unproven", "false"]
    assert loaded.samples[0].images == [tmp_path / "images" / "claim_0.jpg"] and loaded.samples[1].images == []
    assert loaded.samples[0].metadata.claim_date == date(2024, 1, 31)
    assert loaded.report.taxonomy == "factcheck" and loaded.samples[0].text.startswith("A photo shows")


def test_misleading_claims_can_be_kept_apart_or_left_out(tmp_path: Path) -> None:
    path = release(tmp_path)
    assert load_dataset(f"claimreview2024:{path}", {"misleading": "mixture"}).samples[-1].gold_label == "mixture"
    skipped = load_dataset(f"claimreview2024:{path}", {"misleading": "skip"})
    assert len(skipped.samples) == 3 and skipped.report.skipped == {"label 'misleading' has no mapping onto the chosen taxonomy": 1}


def test_a_missing_image_or_an_unknown_label_names_the_row(tmp_path: Path) -> None:
    path = release(tmp_path)
    (tmp_path / "images" / "claim_0.jpg").unlink()
    with pytest.raises(InputError, match=r"test.json\[0\].image"):
        load_dataset(f"claimreview2024:{path}")
    other = tmp_path / "other"
    other.mkdir()
    rows = json.loads(path.read_text())
    rows[1]["label"] = "pants on fire"
    (other / "test.json").write_text(json.dumps(rows))
    with pytest.raises(InputError, match="unknown label 'pants on fire'"):
        load_dataset(f"claimreview2024:{other / 'test.json'}", {"with_images": "false"})
