"""The batch runner end to end through ``m3d evaluate`` in a subprocess, against a loopback model server.

An interrupted run (SIGTERM, then SIGKILL with a torn last line) resumed to the end must hold the
same rows as an uninterrupted run: same ids, none twice, same answers, failures recorded.
"""

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
from typer.testing import CliRunner

from debates.cli.main import app
from debates.eval.run.batch import prepare_run_dir
from debates.eval.records import RunManifest
from debates.eval.records import read_rows
from m3d_agents.errors import InputError
from tests.support.paths import REPO

SAMPLES = 40
ENTRY = "from debates.cli.main import app; app()"


@pytest.fixture
def stub_url() -> Iterator[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    server = subprocess.Popen([sys.executable, "-m", "tests.support.serve_stub", "--delay", "0.2"], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        yield server.stdout.readline().strip()
    finally:
        server.kill()
        server.wait()


@pytest.fixture
def workspace(tmp_path: Path, stub_url: str) -> Path:
    (tmp_path / "m3d.yaml").write_text(
        "backends:\n"
        f"  stub: {{kind: vllm, base_url: '{stub_url}', model: test-model, cache: false, vision: false,"
        " concurrency: 8, transport_retries: 0}\n"
    )
    posts = [{"id": f"p{i:02d}", "text": f"Post number {i} about event {i * 7 % 11}", "label": ["fake", "real"][i % 2]}
             for i in range(SAMPLES)]
    posts[5]["text"] = "FAIL-ME: the server refuses this one"
    (tmp_path / "posts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in posts))
    return tmp_path


def arguments(out: str) -> list[str]:
    return ["evaluate", "--config", "check", "--dataset", "jsonl:posts.jsonl", "-o", "text=text", "-o", "label=label",
            "-o", "id=id", "--backend", "stub", "--config-file", "m3d.yaml", "--concurrency", "3", "--out", out,
            "--no-progress"]


def command(out: str) -> list[str]:
    return [sys.executable, "-c", ENTRY, *arguments(out)]


def env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(REPO)}


def lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def start_and_stop(workspace: Path, out: str, after_rows: int, sig: signal.Signals) -> int:
    process = subprocess.Popen(command(out), cwd=workspace, env=env(), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    results = workspace / out / "results.jsonl"
    deadline = time.monotonic() + 120
    while lines(results) < after_rows and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert process.poll() is None, "the run finished before it could be interrupted"
    process.send_signal(sig)
    process.wait(timeout=60)
    return process.returncode


def test_interrupted_and_resumed_run_has_the_rows_of_an_uninterrupted_run(workspace: Path) -> None:
    full = CliRunner().invoke(app, arguments("full"))
    assert full.exit_code == 0, full.output
    expected = {r.sample_id: r for r in read_rows(workspace / "full" / "results.jsonl")[0]}
    assert len(expected) == SAMPLES

    assert start_and_stop(workspace, "part", after_rows=4, sig=signal.SIGTERM) == 130
    after_term = lines(workspace / "part" / "results.jsonl")
    assert 4 <= after_term < SAMPLES

    assert start_and_stop(workspace, "part", after_rows=after_term + 6, sig=signal.SIGKILL) == -signal.SIGKILL
    results = workspace / "part" / "results.jsonl"
    after_kill = lines(results)
    with results.open("ab") as handle:
        handle.write(b'{"sample_id": "p39", "index": 39, "seed": 1, "sta')

    resumed = CliRunner().invoke(app, arguments("part"))
    assert resumed.exit_code == 0, resumed.output
    assert "torn last line" in resumed.output
    assert f"({SAMPLES - after_kill} this time)" in resumed.output.replace("\n", " ")

    raw = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(raw) == SAMPLES == len({r["sample_id"] for r in raw})
    got = {r.sample_id: r for r in read_rows(results)[0]}
    assert got.keys() == expected.keys()
    for sample_id, row in expected.items():
        other = got[sample_id]
        assert (other.status, other.label, other.confidence, other.seed, other.gold) == (
            row.status, row.label, row.confidence, row.seed, row.gold), sample_id
    failed = got["p05"]
    assert failed.status == "error" and failed.error is not None and "400" in failed.error.message
    assert sum(1 for r in got.values() if r.status == "error") == 1

    for name in ("report.md", "metrics.json", "confusion.png", "accuracy_vs_latency.png", "accuracy_vs_cost.png"):
        assert (workspace / "part" / name).stat().st_size > 0, name
    metrics = json.loads((workspace / "part" / "metrics.json").read_text())["metrics"]
    assert metrics["samples"] == SAMPLES and metrics["errors"] == 1 and metrics["cost_usd"] == 0.0

    compared = CliRunner().invoke(app, ["compare", "full", "part", "--json"])
    assert compared.exit_code == 0, compared.output
    comparison = json.loads(compared.stdout[compared.stdout.index("{"):])["comparisons"][0]
    assert comparison["paired_samples"] == SAMPLES, "a failed sample is paired too, and counts as not correct"
    assert comparison["accuracy"]["difference"] == 0.0 and comparison["accuracy"]["low"] == 0.0


def test_a_run_folder_refuses_rows_of_a_different_run(tmp_path: Path) -> None:
    manifest = RunManifest(config="check", dataset="jsonl:posts.jsonl", backend="stub", seed=0, taxonomy="binary")
    prepare_run_dir(tmp_path / "run", manifest)
    prepare_run_dir(tmp_path / "run", manifest.model_copy())
    with pytest.raises(InputError, match="holds a different run"):
        prepare_run_dir(tmp_path / "run", manifest.model_copy(update={"seed": 5}))


def test_a_debate_configuration_runs_in_a_batch_with_a_rate_limit(workspace: Path) -> None:
    args = arguments("runs/async")
    args[args.index("check")] = "async"
    args[args.index("--concurrency") + 1] = "4"
    result = CliRunner().invoke(app, [*args, "--limit", "4", "--rate-limit", "stub=6000"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    rows, _ = read_rows(workspace / "runs" / "async" / "results.jsonl")
    assert len(rows) == 4
    assert all(row.status != "error" for row in rows), [row.error for row in rows]
    assert all(row.status == "ok" and row.label in ("fake", "real") for row in rows), "the stub answers turns readably"
    assert all(row.config == "async" and row.model_calls in (2, 4, 6) for row in rows), "whole rounds of two seats"



def test_a_configuration_from_a_yaml_file_runs_names_its_run_by_the_file_and_resumes(workspace: Path) -> None:
    (workspace / "three-voices.yaml").write_text(
        "name: three-voices\nprotocol: async\nmax_rounds: 1\non_no_consensus: majority\n"
        "seats:\n  - {name: agent_a}\n  - {name: agent_b}\n  - {name: agent_c}\n"
    )
    args = arguments("unused")
    del args[args.index("--out"):args.index("--out") + 2]
    args[args.index("check")] = "three-voices.yaml"
    first = CliRunner().invoke(app, [*args, "--limit", "3"], catch_exceptions=False)
    assert first.exit_code == 0, first.output
    results = workspace / "runs" / "three-voices-jsonl-stub" / "results.jsonl"
    rows, _ = read_rows(results)
    assert len(rows) == 3 and all(row.verdict is not None for row in rows)
    assert [(row.status, row.model_calls) for row in rows] == [("ok", 3)] * 3
    turns = {tuple((turn["speaker"], turn["round"]) for turn in row.verdict["transcript"]) for row in rows if row.verdict}
    assert turns == {(("agent_a", 1), ("agent_b", 1), ("agent_c", 1))}, "one round of the file's three seats, not a built-in's"
    assert {row.config for row in rows} == {str(workspace / "three-voices.yaml")}
    again = CliRunner().invoke(app, [*args, "--limit", "3"], catch_exceptions=False)
    assert again.exit_code == 0, again.output
    assert len(read_rows(results)[0]) == 3, "a rerun of the same file resumes and repeats no row"

def test_sigterm_stops_a_debate_in_the_middle_of_a_slow_model_call(tmp_path: Path) -> None:
    """A debate turn can wait minutes on a model; an interrupted run must not wait with it."""
    server = subprocess.Popen([sys.executable, "-m", "tests.support.serve_stub", "--delay", "60"], cwd=REPO, env=env(),
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        (tmp_path / "m3d.yaml").write_text(
            f"backends:\n  stub: {{kind: vllm, base_url: '{url}', model: test-model, cache: false, vision: false,"
            " transport_retries: 0, timeout_s: 120}\n"
        )
        (tmp_path / "posts.jsonl").write_text(json.dumps({"id": "slow", "text": "A post", "label": "fake"}) + "\n")
        args = arguments("runs/slow")
        args[args.index("check")] = "async"
        process = subprocess.Popen([sys.executable, "-c", ENTRY, *args], cwd=tmp_path, env=env(),
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while not (tmp_path / "runs" / "slow" / "run.json").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(2.0)
        assert process.poll() is None
        stopped_at = time.monotonic()
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=45) == 130
        assert time.monotonic() - stopped_at < 20, "the run waited for the model call instead of stopping"
        assert lines(tmp_path / "runs" / "slow" / "results.jsonl") == 0
    finally:
        server.kill()
        server.wait()
