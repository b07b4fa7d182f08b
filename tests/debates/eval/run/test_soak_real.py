"""``benchmarks/soak_real.py``: a tiny run of the real soak, so that it cannot rot, and how it reads its rows.

The full soak (500 samples over seven configurations) is run by hand; here ``--quick`` runs two
configurations over a few real posts, MR2 claims and the example video, with its kill -9 and resume.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.soak_real import Piece, examine
from debates.eval.records import EvalRow, ResultsFile
from tests.support.paths import REPO, shared_data

LINES = [
    r"process crashes: (\d+)",
    r"items a parser lost: (\d+) \(each named in its report\)",
    r"rows lost or repeated: (\d+)",
    r"peak RSS MB: (\d+\.\d)",
    r"RSS growth over the last half %: (-?\d+\.\d)",
]


@pytest.mark.integration
def test_the_quick_soak_runs_real_posts_and_prints_its_lines() -> None:
    shared_data("mr2-sample", "dataset_items_test.json")
    shared_data("mediaeval2016-dev", "posts.txt")
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "soak_real.py"), "--quick"], cwd=REPO,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    assert len(lines) == len(LINES), done.stdout
    figures = [re.fullmatch(pattern, line) for pattern, line in zip(LINES, lines)]
    assert all(figures), done.stdout
    crashes, lost, wrong, peak, _growth = (m.group(1) for m in figures if m is not None)
    assert int(crashes) == 0, done.stderr[-3000:]
    assert int(wrong) == 0
    assert float(peak) > 50, "the memory of the evaluation processes was measured"
    # Every piece ran; the one killed midway was resumed by the product's own resume (or ended before the kill).
    for piece in ("check:mr2", "check:posts", "factguard:mr2", "factguard:posts"):
        assert re.search(rf"^{piece}: \d+ samples, .*done \(\d+ rows\)", done.stderr, re.M), done.stderr[-3000:]
    assert re.search(r"^check:mr2: .*(kill -9 at \d+ of 5 rows; done|came in too fast)", done.stderr, re.M)


def row(sample_id: str, verdict: dict[str, object]) -> EvalRow:
    return EvalRow(sample_id=sample_id, index=0, seed=0, status="ok", taxonomy="binary", config="check", backend="soak",
                   verdict=verdict)


def test_lost_items_are_read_from_the_verdicts_and_rows_are_checked_against_the_piece(tmp_path: Path) -> None:
    crashed = "page https://news.example/a b.html not read: the extractor crashed (signal 11)"
    first = {"evidence_report": {"items_lost": [crashed]}, "diagnostics": {"items_lost": [crashed]}}
    results = ResultsFile(tmp_path / "results.jsonl")
    results.open()
    # The same loss in the evidence report and the diagnostics is one item; another sample's is another.
    results.append(row("s1", first))
    results.append(row("s2", {"diagnostics": {"items_lost": ["image /data/x.jpg not read: needed more than 2048 MiB"]},
                              "evidence_report": {"providers": [{"failures": ["mr2-direct: not read: timed out"]}]}}))
    results.append(row("s1", first))
    results.close()
    with open(tmp_path / "results.jsonl", "ab") as torn:
        torn.write(b'{"sample_id": "s3", "ind')
    wrong, lost, unnamed = examine(Piece("check", "mr2", ["s1", "s2", "s3"], tmp_path))
    assert lost == [f"s1: {crashed}", "s2: image /data/x.jpg not read: needed more than 2048 MiB"]
    assert unnamed == 1, "a loss that names no item is counted apart"
    assert wrong == 2, "s3 is missing (its line is torn) and s1 was written twice"
