"""No command writes over a user's files: ``--out ""`` (the current folder) and ``--out`` on a folder
of other files are refused with one line and exit status 2, and nothing in the folder changes."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest
from typer.testing import CliRunner

from debates.cli.main import app
from tests.support.stub_workspace import stub_workspace

USERS_REPORT = "# My own report\n\nWeeks of work.\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    with stub_workspace(tmp_path, posts=2):
        (tmp_path / "report.md").write_text(USERS_REPORT)
        (tmp_path / "project").mkdir()
        (tmp_path / "project" / "report.md").write_text(USERS_REPORT)
        yield tmp_path


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def run(*args: str) -> tuple[int, list[str]]:
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, [line for line in result.stderr.splitlines() if line.strip()]


EVALUATE = ["evaluate", "--config", "check", "--dataset", "jsonl:posts.jsonl", "-o", "text=text", "-o", "label=label",
            "-o", "id=id", "--backend", "stub", "--config-file", "m3d.yaml", "--no-progress"]


@pytest.mark.parametrize("out, words", [
    ("", "is empty"),
    ("  ", "is empty"),
    (".", "is not empty and is not a run folder"),
    ("project", "is not empty and is not a run folder"),
])
def test_evaluate_refuses_a_folder_of_other_files(workspace: Path, out: str, words: str) -> None:
    before = snapshot(workspace)
    code, lines = run(*EVALUATE, "--out", out)
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: ") and words in lines[0], lines
    assert "--out" in lines[0] or "out:" in lines[0]
    assert snapshot(workspace) == before, "the refused run changed the folder"


def test_an_interrupted_start_is_still_a_run_folder(workspace: Path) -> None:
    """A run killed after taking its lock, before its run.json, leaves only the lock: resuming works."""
    (workspace / "fresh").mkdir()
    (workspace / "fresh" / ".lock").write_text("12345")
    code, lines = run(*EVALUATE, "--out", "fresh")
    assert code == 0, lines
    assert (workspace / "fresh" / "run.json").is_file()


def test_evaluate_resumes_its_own_run_folder(workspace: Path) -> None:
    assert run(*EVALUATE, "--out", "runs/a")[0] == 0
    assert run(*EVALUATE, "--out", "runs/a")[0] == 0


def test_reproduce_refuses_a_folder_of_other_files(workspace: Path) -> None:
    before = snapshot(workspace)
    code, lines = run("reproduce", "agentm3d-table1", "--dataset", "mmfakebench:x.json", "--backend", "stub",
                      "--config-file", "m3d.yaml", "--out", "project")
    assert code == 2 and len(lines) == 1 and "is not empty" in lines[0] and "project" in lines[0], lines
    code, lines = run("reproduce", "agentm3d-table1", "--dataset", "mmfakebench:x.json", "--backend", "stub",
                      "--config-file", "m3d.yaml", "--out", "")
    assert code == 2 and len(lines) == 1 and "is empty" in lines[0], lines
    assert snapshot(workspace) == before


def test_compare_refuses_a_folder_of_other_files(workspace: Path) -> None:
    assert run(*EVALUATE, "--out", "runs/a")[0] == 0
    assert run(*EVALUATE, "--out", "runs/b", "--seed", "1")[0] == 0
    before = snapshot(workspace / "project")
    code, lines = run("compare", "runs/a", "runs/b", "--out", "project")
    assert code == 2 and len(lines) == 1 and "is not empty" in lines[0], lines
    assert snapshot(workspace / "project") == before
    code, lines = run("compare", "runs/a", "runs/b", "--out", "comparison")
    assert code == 0, lines
    assert run("compare", "runs/a", "runs/b", "--out", "comparison")[0] == 0, "its own folder is written again"
