"""One run per folder, seen from the command line: a second ``m3d evaluate`` on a folder in use is
refused with one clear line, and a run killed with SIGKILL leaves no lock that blocks the resume."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from debates.eval.records import read_rows
from tests.support.paths import REPO

SAMPLES = 12


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    server = subprocess.Popen([sys.executable, "-m", "tests.support.serve_stub", "--delay", "1.0"], cwd=REPO, env=env(),
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        (tmp_path / "m3d.yaml").write_text(
            f"backends:\n  stub: {{kind: vllm, base_url: '{url}', model: test-model, cache: false, vision: false, transport_retries: 0}}\n"
        )
        (tmp_path / "posts.jsonl").write_text(
            "".join(json.dumps({"id": f"p{i:02d}", "text": f"Post {i}", "label": "fake"}) + "\n" for i in range(SAMPLES))
        )
        yield tmp_path
    finally:
        server.kill()
        server.wait()


def command(concurrency: int = 1) -> list[str]:
    return [sys.executable, "-m", "debates", "evaluate", "--config", "check", "--dataset", "jsonl:posts.jsonl",
            "-o", "text=text", "-o", "label=label", "-o", "id=id", "--backend", "stub", "--config-file", "m3d.yaml",
            "--concurrency", str(concurrency), "--out", "run", "--no-progress"]


def wait_for_rows(path: Path, rows: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while (not path.exists() or path.read_bytes().count(b"\n") < rows) and time.monotonic() < deadline:
        assert process.poll() is None, "the first run ended before the test could use its folder"
        time.sleep(0.05)


def test_a_second_run_on_a_folder_in_use_is_refused_and_a_killed_run_leaves_no_stuck_lock(workspace: Path) -> None:
    first = subprocess.Popen(command(), cwd=workspace, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for_rows(workspace / "run" / "results.jsonl", 1, first)
        second = subprocess.run(command(), cwd=workspace, env=env(), capture_output=True, text=True, timeout=60)
        assert second.returncode == 2
        assert "Traceback" not in second.stdout + second.stderr
        lines = [line for line in second.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, second.stderr
        assert lines[0].startswith("error: out: run is in use by a running m3d evaluate") and f"(pid {first.pid})" in lines[0]
        assert first.poll() is None, "the refused run must leave the first one alone"
    finally:
        first.send_signal(signal.SIGKILL)
        first.wait()
    assert (workspace / "run" / ".lock").exists(), "a killed run leaves its lock file behind, which must not matter"

    resumed = subprocess.run(command(concurrency=6), cwd=workspace, env=env(), capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    rows = [json.loads(line) for line in (workspace / "run" / "results.jsonl").read_text().splitlines() if line.strip()]
    ids = [row.get("sample_id") for row in rows]
    assert len(ids) == len(set(ids)) and len(read_rows(workspace / "run" / "results.jsonl")[0]) == SAMPLES
