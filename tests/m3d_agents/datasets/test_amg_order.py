"""The AMG taxonomy and the loader's assumed numeric label order.

The release does not say what "0" to "5" mean; the loader assumes the order in which the papers
list the classes. With a real ``test.json`` (``AMG_TEST_JSON``), the counts per code must match
the T2Agent paper's 575 / 74 / 69 / 29 / 136 / 90, which checks the assumption.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

import pytest

from m3d_agents.datasets import load_dataset
from m3d_agents.datasets.amg import DEFAULT_ORDER
from m3d_agents.labels import get_taxonomy
from tests.support.paths import REPO

FIXTURE = REPO / "tests" / "fixtures" / "datasets" / "amg" / "dataset" / "test.json"
PAPER_TEST_COUNTS = {
    "real": 575, "image_fabrication": 74, "non_evidential_image": 69,
    "entity_inconsistency": 29, "event_inconsistency": 136, "time_inconsistency": 90,
}


def test_the_amg_taxonomy_has_the_papers_five_forgery_classes() -> None:
    amg = get_taxonomy("amg")
    assert amg.labels == list(PAPER_TEST_COUNTS)
    assert "text_fabrication" not in amg.labels
    assert [label for label, fake in amg.misinformation.items() if not fake] == ["real"]


def test_the_fixture_loads_with_the_documented_order(tmp_path: Path) -> None:
    assert DEFAULT_ORDER.split(",") == list(PAPER_TEST_COUNTS)
    loaded = load_dataset(f"amg:{FIXTURE}")
    assert [s.gold_label for s in loaded.samples] == ["real", "image_fabrication", "time_inconsistency"]
    rows = [{"Id": str(i), "content": f"post {i}", "label": str(i), "create_time": 0} for i in range(6)]
    path = tmp_path / "test.json"
    path.write_text("\n".join(json.dumps(row, indent=4) for row in rows))
    assert [s.gold_label for s in load_dataset(f"amg:{path}").samples] == list(PAPER_TEST_COUNTS)


def test_a_real_test_split_has_the_papers_counts_per_code() -> None:
    path = os.environ.get("AMG_TEST_JSON")
    if not path:
        pytest.skip("AMG is not in the shared data; set AMG_TEST_JSON to its dataset/test.json to check the label order")
    loaded = load_dataset(f"amg:{path}")
    assert dict(Counter(s.gold_label for s in loaded.samples)) == PAPER_TEST_COUNTS
