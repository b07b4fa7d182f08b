"""FactGuard's Tables 2 and 4 as table files: every number against the paper's own lines."""

from __future__ import annotations

import re

import pytest

from debates.eval.papers.paper_tables import load_table
from tests.support.paths import REPO

PAPER = (REPO.parent / "shared" / "papers" / "factguard.txt").resolve()

TABLE2 = {  # the paper's lines 207-209: ratio -> FakeSV P, R, FakeVV P, R
    "cost-1-2": (80.8, 82.1, 83.2, 83.7),
    "cost-1-1": (82.2, 80.6, 85.8, 82.1),
    "cost-2-1": (83.2, 75.0, 86.6, 79.3),
}
TABLE4 = {  # the paper's lines 242-247: variant -> FakeSV Acc, F1, FakeTT Acc, F1
    "rollouts-6": (77.3, 78.9, 72.6, 69.4),
    "rollouts-8": (79.3, 81.4, 75.3, 75.2),
    "rollouts-12": (79.5, 81.5, 75.2, 74.3),
    "beta-002": (78.2, 79.5, 74.6, 73.4),
    "beta-004": (79.3, 81.4, 75.3, 75.2),
    "beta-006": (78.8, 80.9, 74.8, 73.7),
}


def table2_numbers() -> dict[str, tuple[float, ...]]:
    table = load_table("factguard-table2")
    return {r.id: (*table.figures(r, "fakesv").values(), *table.figures(r, "fakevv").values()) for r in table.rows}


def table4_numbers() -> dict[str, tuple[float, ...]]:
    table = load_table("factguard-table4")
    return {r.id: (*table.figures(r, "fakesv").values(), *table.figures(r, "fakett").values()) for r in table.rows}


def test_tables_2_and_4_hold_the_papers_numbers_and_run_factguard() -> None:
    assert table2_numbers() == TABLE2 and table4_numbers() == TABLE4
    for name in ("factguard-table2", "factguard-table4"):
        assert load_table(name).configs() == ["factguard"]
    table1 = load_table("factguard-table1")
    ours = next(r for r in table1.rows if r.id == "factguard")
    assert TABLE2["cost-1-1"] == (*(table1.figures(ours, "fakesv")[m] for m in ("fake_precision", "fake_recall")),
                                  *(table1.figures(ours, "fakevv")[m] for m in ("fake_precision", "fake_recall")))
    assert TABLE4["rollouts-8"] == TABLE4["beta-004"] == (
        *(table1.figures(ours, "fakesv")[m] for m in ("accuracy", "fake_f1")),
        *(table1.figures(ours, "fakett")[m] for m in ("accuracy", "fake_f1")))


def test_every_number_is_on_the_papers_line() -> None:
    if not PAPER.is_file():
        pytest.skip(f"needs the paper's text at {PAPER}")
    lines = PAPER.read_text(encoding="utf-8").splitlines()

    def numbers(line: int) -> tuple[float, ...]:
        return tuple(float(x) for x in re.findall(r"\d+\.\d", lines[line - 1])[-4:])

    assert [numbers(n) for n in (207, 208, 209)] == list(TABLE2.values())
    assert [numbers(n) for n in range(242, 248)] == list(TABLE4.values())
    assert lines[203].startswith("Table 2:") and lines[238].startswith("Table 4:")
