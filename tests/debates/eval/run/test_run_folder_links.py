"""Every file ``m3d evaluate`` writes in a run folder is opened without following links: a link
planted as ``.lock``, ``results.jsonl``, ``run.json``, ``report.md`` ... is refused with one line
naming it, and the file it points at is left exactly as it was."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from debates.cli.main import app
from debates.eval.records import EvalRow
from debates.eval.score.annotations import append_annotation, read_annotations
from debates.strategies.factguard.training.trajectories import append_row
from m3d_agents.errors import InputError
from m3d_agents.safe_files import AppendOnlyFile
from tests.support.stub_workspace import stub_workspace

PRECIOUS = "a file of the user's that no run may touch\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    with stub_workspace(tmp_path, posts=3):
        (tmp_path / "precious.txt").write_text(PRECIOUS)
        yield tmp_path


def evaluate(workspace: Path, *extra: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, [
        "evaluate", "--config", "check", "--dataset", "jsonl:posts.jsonl", "-o", "text=text", "-o", "label=label",
        "-o", "id=id", "--backend", "stub", "--config-file", "m3d.yaml", "--out", "run", "--no-progress", *extra,
    ])
    return result.exit_code, result.stderr


@pytest.mark.parametrize("name", [".lock", "results.jsonl", "run.json", "report.md", "metrics.json", "confusion.png"])
def test_a_linked_run_folder_file_is_refused_and_its_target_untouched(workspace: Path, name: str) -> None:
    run = workspace / "run"
    if name != "run.json":
        assert evaluate(workspace)[0] == 0, "a first, clean run"
        (run / name).unlink(missing_ok=True)
    else:
        run.mkdir()
    (run / name).symlink_to(workspace / "precious.txt")
    code, stderr = evaluate(workspace, "--rerun-errors")
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, stderr
    assert lines[0].startswith("error: ") and name in lines[0] and "symbolic link" in lines[0], lines[0]
    assert (workspace / "precious.txt").read_text() == PRECIOUS
    assert (run / name).is_symlink()


def test_a_linked_trajectories_file_is_refused(workspace: Path) -> None:
    assert evaluate(workspace)[0] == 0
    (workspace / "run" / "trajectories.jsonl").symlink_to(workspace / "precious.txt")
    code, stderr = evaluate(workspace, "--record-trajectories", "--rerun-errors")
    assert code == 2 and "trajectories.jsonl" in stderr and "symbolic link" in stderr
    assert (workspace / "precious.txt").read_text() == PRECIOUS


def test_a_linked_annotations_file_is_refused(workspace: Path) -> None:
    assert evaluate(workspace)[0] == 0
    run = workspace / "run"
    (run / "annotations.jsonl").symlink_to(workspace / "precious.txt")
    rows = [EvalRow.model_validate(json.loads(line)) for line in (run / "results.jsonl").read_text().splitlines()]
    with pytest.raises(InputError, match="symbolic link"):
        append_annotation(run, rows, "binary", sample_id="p0", label="real")
    with pytest.raises(InputError, match="symbolic link"):
        read_annotations(run)
    assert (workspace / "precious.txt").read_text() == PRECIOUS


def test_a_torn_annotation_line_is_cut_before_the_next_one_is_appended(workspace: Path) -> None:
    """The audit's case: a crash mid-append left half a row; the next override must not glue onto it."""
    assert evaluate(workspace)[0] == 0
    run = workspace / "run"
    rows = [EvalRow.model_validate(json.loads(line)) for line in (run / "results.jsonl").read_text().splitlines()]
    append_annotation(run, rows, "binary", sample_id="p0", label="real", note="first")
    with (run / "annotations.jsonl").open("ab") as handle:
        handle.write(b'{"sample_id": "p1", "label": "re')
    append_annotation(run, rows, "binary", sample_id="p2", label="real", note="after the crash")
    found = read_annotations(run)
    assert [(a.sample_id, a.note) for a in found] == [("p0", "first"), ("p2", "after the crash")]
    assert (run / "annotations.jsonl").read_bytes().count(b"\n") == 2


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_file_that_is_not_regular_is_refused(tmp_path: Path, kind: str) -> None:
    path = tmp_path / "results.jsonl"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    with pytest.raises(InputError, match="not a regular file"):
        AppendOnlyFile(path).open()


class Whole(BaseModel):
    whole: int


def test_trajectory_appends_repair_a_torn_tail_and_refuse_links(tmp_path: Path) -> None:
    path = tmp_path / "trajectories.jsonl"
    path.write_bytes(b'{"whole": 1}\n{"torn')
    append_row(path, Whole(whole=2))
    assert path.read_bytes() == b'{"whole": 1}\n{"whole": 2}\n'
    link = tmp_path / "link.jsonl"
    link.symlink_to(path)
    with pytest.raises(InputError, match="symbolic link"):
        append_row(link, Whole(whole=3))
