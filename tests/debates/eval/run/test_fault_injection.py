"""Batch runs against an endpoint that fails a seeded share of its calls: no crash, nothing lost,
every failure recorded with its reason, never a guessed answer.

The full-size run (100 MediaEval posts per configuration, and a kill -9) is ``benchmarks/faults.py``;
this is the same path, small enough for every test run.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Iterator

import pytest
from typer.testing import CliRunner

from debates.cli.main import app
from tests.support.fault_server import FAULTS, FaultServer

POSTS = 24


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer(seed=11, rate=0.4, hang_s=2.0) as running:
        yield running


@pytest.fixture
def workspace(tmp_path: Path, server: FaultServer) -> Path:
    (tmp_path / "m3d.yaml").write_text(
        f"backends:\n  faulty: {{kind: vllm, base_url: '{server.base_url}', model: fault-model, cache: false,"
        " timeout_s: 1.0, transport_retries: 3}\n"
    )
    (tmp_path / "posts.jsonl").write_text("".join(
        json.dumps({"id": f"p{i:02d}", "text": f"Post {i}: flood waters reach the station #{i * 7 % 13}", "label": ["fake", "real"][i % 2]})
        + "\n" for i in range(POSTS)
    ))
    return tmp_path


def evaluate(config: str, limit: int) -> tuple[int, str, list[dict[str, object]]]:
    result = CliRunner().invoke(app, [
        "evaluate", "--config", config, "--dataset", "jsonl:posts.jsonl", "-o", "text=text", "-o", "label=label", "-o", "id=id",
        "--limit", str(limit), "--backend", "faulty", "--config-file", "m3d.yaml", "--concurrency", "6", "--out", config,
        "--no-progress",
    ])
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    rows = [json.loads(line) for line in Path(config, "results.jsonl").read_text().splitlines()]
    return result.exit_code, result.output, rows


@pytest.mark.parametrize("config, limit, kinds", [("check", POSTS, 4), ("async", 8, 2)])
def test_a_faulty_endpoint_costs_no_crash_and_no_row(
    workspace: Path, server: FaultServer, config: str, limit: int, kinds: int
) -> None:
    code, output, rows = evaluate(config, limit)
    assert code == 0, output
    assert "Traceback" not in output
    assert sorted(str(r["sample_id"]) for r in rows) == [f"p{i:02d}" for i in range(limit)]
    for row in rows:
        if row["status"] == "ok":
            assert row["label"] in ("fake", "real")
        elif row["status"] == "abstained":
            assert row["label"] is None and row["abstain_reason"]
        else:
            error = row["error"]
            assert isinstance(error, dict) and error["message"] and "Traceback" not in str(error["message"])
    injected = {fault for fault in FAULTS if server.stats[fault]}
    assert len(injected) >= kinds, server.stats
    assert server.stats["ok"] >= sum(1 for r in rows if r["status"] == "ok")


def test_transient_faults_are_retried_until_they_pass(workspace: Path, server: FaultServer) -> None:
    server.faults = ("http_500", "http_429", "close", "hang")
    server.rate = 0.25
    code, output, rows = evaluate("check", 12)
    assert code == 0, output
    statuses = Counter(str(r["status"]) for r in rows)
    failed = [r["error"] for r in rows if r["status"] == "error"]
    # A sample fails only when every one of its four attempts drew a fault: rare, and then recorded.
    assert statuses["ok"] >= 10, (statuses, failed)
    assert all("did not answer after 4 attempts" in str(e["message"]) for e in failed)  # type: ignore[index]
    assert server.stats["requests"] > 12
