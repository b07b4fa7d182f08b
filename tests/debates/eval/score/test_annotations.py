"""Reviewers' overrides: appended one fsynced row at a time, never rewritten, and able to replace the
data set's labels when a run is scored (report, ``m3d report``, ``m3d compare``)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from debates.cli.main import app
from debates.eval.score.annotations import ANNOTATIONS, append_annotation, latest_labels, read_annotations, with_annotated_gold
from debates.eval.score.report import ANNOTATED_REPORT, REPORT, load_run, summarise, write_report
from m3d_agents.errors import InputError
from tests.support.runs import make_run


@pytest.fixture
async def run(tmp_path: Path) -> Path:
    return await make_run(tmp_path / "runs" / "async")


def annotate(run: Path, sample_id: str, label: str, note: str = "") -> None:
    manifest, rows = load_run(run)
    append_annotation(run, rows, manifest.taxonomy, sample_id=sample_id, label=label, note=note, reviewer="r")


def test_each_override_is_appended_and_earlier_rows_are_never_rewritten(run: Path) -> None:
    annotate(run, "verite-1", "pristine", "the caption is right")
    first = (run / ANNOTATIONS).read_bytes()
    annotate(run, "verite-1", "falsified", "no, it is not")
    annotate(run, "verite-0", "falsified")
    data = (run / ANNOTATIONS).read_bytes()
    assert data.startswith(first) and data.count(b"\n") == 3
    rows = read_annotations(run)
    assert [(a.sample_id, a.label, a.previous_gold, a.predicted) for a in rows] == [
        ("verite-1", "pristine", "falsified", "pristine"), ("verite-1", "falsified", "falsified", "pristine"),
        ("verite-0", "falsified", "pristine", "pristine")]
    assert {k: a.label for k, a in latest_labels(rows).items()} == {"verite-1": "falsified", "verite-0": "falsified"}


def test_an_override_must_name_a_sample_of_the_run_and_a_label_of_its_taxonomy(run: Path) -> None:
    with pytest.raises(InputError, match="no sample 'verite-9'"):
        annotate(run, "verite-9", "pristine")
    with pytest.raises(InputError, match="'fake' is not a label of the ooc taxonomy"):
        annotate(run, "verite-1", "fake")
    assert not (run / ANNOTATIONS).exists()


def test_a_torn_last_line_is_skipped_and_a_bad_earlier_line_is_an_error(run: Path) -> None:
    annotate(run, "verite-1", "pristine")
    with (run / ANNOTATIONS).open("ab") as handle:
        handle.write(b'{"sample_id": "verite-0", "lab')
    assert [a.sample_id for a in read_annotations(run)] == ["verite-1"]
    (run / ANNOTATIONS).write_bytes(b"not json\n" + (run / ANNOTATIONS).read_bytes())
    with pytest.raises(InputError, match=f"{ANNOTATIONS}:1"):
        read_annotations(run)


def test_scoring_against_annotations_replaces_the_gold_label_of_annotated_samples_only(run: Path) -> None:
    annotate(run, "verite-1", "pristine")
    _, rows = load_run(run)
    scored, annotated = with_annotated_gold(rows, read_annotations(run), "ooc")
    assert annotated == 1
    assert [(r.sample_id, r.gold, r.gold_misinformation) for r in scored] == [
        ("verite-0", "pristine", False), ("verite-1", "pristine", False), ("verite-2", "falsified", True)]
    assert summarise(run).metrics.classification.accuracy == pytest.approx(1 / 3)  # type: ignore[union-attr]
    assert summarise(run, "annotations").metrics.classification.accuracy == pytest.approx(2 / 3)  # type: ignore[union-attr]


def test_the_report_against_annotations_is_written_beside_the_other(run: Path) -> None:
    annotate(run, "verite-1", "pristine")
    report = (run / REPORT).read_text()
    summary = write_report(run, "annotations")
    assert summary.gold == "annotations" and summary.annotated == 1
    text = (run / ANNOTATED_REPORT).read_text()
    assert "1 sample(s) take their gold label from `annotations.jsonl`" in text
    assert "| accuracy (abstained and failed samples count as wrong) | 0.667 |" in text
    assert (run / "confusion.annotations.png").stat().st_size > 0
    assert (run / REPORT).read_text() == report and "| accuracy (abstained and failed samples count as wrong) | 0.333 |" in report


def test_m3d_report_and_compare_score_against_the_annotations(tmp_path: Path) -> None:
    import asyncio

    first = asyncio.run(make_run(tmp_path / "runs" / "async"))
    second = asyncio.run(make_run(tmp_path / "runs" / "sync", config="sync"))
    annotate(first, "verite-1", "pristine")
    runner = CliRunner()

    result = runner.invoke(app, ["report", str(first), "--gold", "annotations"], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert "against the reviewers' labels (1 annotated): accuracy 0.667" in " ".join(result.output.split())

    plain = json.loads(runner.invoke(app, ["compare", str(first), str(second), "--json", "--resamples", "200"]).output)
    result = runner.invoke(app, ["compare", str(first), str(second), "--json", "--resamples", "200", "--gold", "annotations"])
    assert result.exit_code == 0, result.output
    annotated = json.loads(result.output)
    # One run's override counts for both: they are scored against the same gold labels.
    assert [r["annotated"] for r in annotated["runs"]] == [1, 1]
    assert [r["metrics"]["classification"]["accuracy"] for r in plain["runs"]] == pytest.approx([1 / 3, 1 / 3])
    assert [r["metrics"]["classification"]["accuracy"] for r in annotated["runs"]] == pytest.approx([2 / 3, 2 / 3])
    assert annotated["comparisons"][0]["paired_samples"] == 3

    result = runner.invoke(app, ["compare", str(first), str(second), "--gold", "reviewers"])
    assert result.exit_code == 2 and "gold: 'reviewers' is neither 'dataset' nor 'annotations'" in result.output
