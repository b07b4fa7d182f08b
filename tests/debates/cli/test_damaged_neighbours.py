"""One damaged run folder never breaks its neighbours, and a report says whether a run is still being written.

``m3d report`` and ``m3d evaluate`` put every run beside this one on the trade-off plots. A neighbour whose
``run.json`` is garbage, or whose ``results.jsonl`` has a torn line in the middle, is named in one warning
line and left out; this run's report is written and the command succeeds. An error about a results file
names its folder. A run with fewer rows than it asked for is *running* while an ``m3d evaluate`` holds its
lock, and *unfinished (interrupted)* once nothing does.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
from typer.testing import CliRunner

from debates.cli.main import app
from tests.support.paths import REPO
from tests.support.stub_workspace import stub_workspace


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    with stub_workspace(tmp_path, posts=3):
        yield tmp_path


EVALUATE = ["evaluate", "--config", "check", "--dataset", "jsonl:posts.jsonl", "-o", "text=text", "-o", "label=label",
            "-o", "id=id", "--backend", "stub", "--config-file", "m3d.yaml", "--no-progress"]


def m3d(*args: str) -> tuple[int, str, list[str]]:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "100"})
    assert isinstance(result.exception, SystemExit) or result.exception is None, repr(result.exception)
    return result.exit_code, result.stdout, [line for line in result.stderr.splitlines() if line.strip()]


def damage(run: Path, how: str) -> None:
    if how == "garbage-manifest":
        (run / "run.json").write_bytes(b"\x00\xff not a manifest {")
    elif how == "torn-middle":
        lines = (run / "results.jsonl").read_text().splitlines(keepends=True)
        (run / "results.jsonl").write_text(lines[0] + '{"sample_id": "p1", "ind\n' + "".join(lines[1:]))
    elif how == "manifest-of-another-shape":
        (run / "run.json").write_text(json.dumps({"config": ["not", "a", "name"]}))
    elif how == "results-a-folder":
        (run / "results.jsonl").unlink()
        (run / "results.jsonl").mkdir()
    elif how == "manifest-link":
        (run / "run.json").unlink()
        (run / "run.json").symlink_to("/etc/hostname")


DAMAGES = ["garbage-manifest", "torn-middle", "manifest-of-another-shape", "results-a-folder", "manifest-link"]


@pytest.mark.parametrize("how", DAMAGES)
def test_report_names_a_damaged_neighbour_once_and_leaves_it_out(workspace: Path, how: str) -> None:
    assert m3d(*EVALUATE, "--out", "runs/healthy")[0] == 0
    assert m3d(*EVALUATE, "--out", "runs/damaged", "--seed", "1")[0] == 0
    damage(workspace / "runs" / "damaged", how)
    (workspace / "runs" / "healthy" / "report.md").unlink()
    code, stdout, stderr = m3d("report", "runs/healthy")
    assert code == 0, stderr
    warnings = [line for line in stderr if "runs/damaged" in line]
    assert len(warnings) == 1 and warnings[0].startswith("warning: left the neighbouring run"), stderr
    assert "trade-off plots" in warnings[0]
    assert (workspace / "runs" / "healthy" / "report.md").is_file() and "report in" in stdout


@pytest.mark.parametrize("how", ["garbage-manifest", "torn-middle"])
def test_an_evaluation_finishes_whatever_its_neighbours_hold(workspace: Path, how: str) -> None:
    assert m3d(*EVALUATE, "--out", "runs/damaged", "--seed", "1")[0] == 0
    damage(workspace / "runs" / "damaged", how)
    code, stdout, stderr = m3d(*EVALUATE, "--out", "runs/new")
    assert code == 0, stderr
    assert "3/3 samples done" in stdout
    assert sum("runs/damaged" in line for line in stderr) == 1


def test_a_torn_line_in_the_middle_is_named_with_its_folder(workspace: Path) -> None:
    assert m3d(*EVALUATE, "--out", "runs/damaged")[0] == 0
    damage(workspace / "runs" / "damaged", "torn-middle")
    code, _, stderr = m3d("report", "runs/damaged")
    assert code == 2 and len(stderr) == 1, stderr
    assert "runs/damaged/results.jsonl:2" in stderr[0] and "not a result row" in stderr[0], stderr[0]


def test_a_run_still_being_written_is_running_not_interrupted(workspace: Path) -> None:
    assert m3d(*EVALUATE, "--out", "run")[0] == 0
    run = workspace / "run"
    lines = (run / "results.jsonl").read_text().splitlines(keepends=True)
    (run / "results.jsonl").write_text(lines[0])
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from debates.eval.lock import RunLock; "
         "RunLock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(60)", str(run)],
        cwd=REPO, stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        code, _, stderr = m3d("report", "run")
        text = " ".join(stderr)
        assert code == 0 and f"running: 1 of the 3 samples asked for are done so far (m3d evaluate, pid {holder.pid}" in text, text
        assert "interrupted" not in text
        assert (run / ".lock").read_text().strip() == str(holder.pid), "the report only looked at the lock"
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    code, _, stderr = m3d("report", "run")
    text = " ".join(stderr)
    assert code == 0 and "unfinished: 1 of the 3 samples" in text and "interrupted" in text and "running:" not in text


def test_the_report_an_evaluation_writes_of_itself_is_not_running(workspace: Path) -> None:
    """``m3d evaluate`` holds its own lock while it writes its closing report: that is not another process's run."""
    code, _, stderr = m3d(*EVALUATE, "--out", "run", "--limit", "2")
    assert code == 0 and not any("running:" in line for line in stderr), stderr
