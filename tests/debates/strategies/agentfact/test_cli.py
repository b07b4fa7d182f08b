"""AgentFact through the command line against a loopback model server that answers every agent's schema:
an evidence-bounded evaluation of the RW-Post fixture, and an offline check of a recorded MR2 claim."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
from typer.testing import CliRunner

from debates.cli.main import app
from m3d_agents.verdict import Verdict
from tests.support.paths import REPO, shared_data

MAIN = REPO / "tests" / "fixtures" / "datasets" / "AgentFact" / "RW_Post_dataset" / "rwpost_dev_main.jsonl"


@pytest.fixture(scope="module")
def config_file(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    server = subprocess.Popen([sys.executable, "-m", "tests.support.serve_stub"], cwd=REPO, env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().strip()
        path = tmp_path_factory.mktemp("stub") / "m3d.yaml"
        path.write_text(
            f"backends:\n  stub: {{kind: vllm, base_url: '{url}', model: test-model, cache: false, vision: false, transport_retries: 0}}\n"
        )
        yield path
    finally:
        server.kill()
        server.wait()


def test_an_evidence_bounded_evaluation_reports_weighted_scores_and_citation_validity(config_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    arguments = ["evaluate", "--config", "agentfact-bounded", "--dataset", f"rwpost:{MAIN}", "--backend", "stub",
                 "--config-file", str(config_file), "--out", str(out), "--no-progress", "--concurrency", "2"]
    result = CliRunner().invoke(app, arguments)
    assert result.exit_code == 0, result.output
    assert "citation_validity 1.000" in result.output
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    assert sorted(r["sample_id"] for r in rows) == ["rwpost-0", "rwpost-1", "rwpost-2"]
    assert all(r["status"] == "ok" and r["model_calls"] == 3 for r in rows)
    for row in rows:
        verdict = Verdict.model_validate(row["verdict"])
        assert verdict.explanation is not None
        assert set(verdict.explanation.cited_ids()) <= set(verdict.evidence_ids) <= {e.id for e in verdict.evidence}
        assert all(e.reason == "RW-Post ground-truth evidence" for e in verdict.evidence)
    metrics = json.loads((out / "metrics.json").read_text())["metrics"]
    assert metrics["citation_validity"] == 1.0 and metrics["cited_ids"] >= 3
    assert metrics["true_vs_not_true"] is not None
    assert {"weighted_precision", "weighted_recall", "weighted_f1", "macro_f1", "per_class"} <= set(metrics["classification"])
    report = (out / "report.md").read_text()
    for line in ("weighted precision / recall", "true vs not true", "citation validity", "## Per class"):
        assert line in report
    reviews = sorted(p.name for p in (out / "reviews").iterdir())
    assert reviews == ["rwpost-0.json", "rwpost-1.json", "rwpost-2.json"]
    assert len(json.loads((out / "reviews" / "rwpost-0.json").read_text())) == 6

    again = CliRunner().invoke(app, arguments)
    assert again.exit_code == 0 and "(0 this time)" in again.output
    assert [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()] == rows


def test_a_recorded_mr2_claim_is_checked_offline_and_every_cited_id_is_in_the_evidence(config_file: Path) -> None:
    root = shared_data("mr2-sample")
    result = CliRunner().invoke(app, ["check", "--config", "agentfact", "--replay-mr2", str(root), "--sample-id", "4775631591839692",
                                      "--backend", "stub", "--config-file", str(config_file), "--json"])
    assert result.exit_code == 0, result.output
    verdict = Verdict.model_validate_json(result.stdout)
    assert verdict.config == "agentfact" and verdict.taxonomy == "factcheck"
    assert verdict.abstained or verdict.explanation is not None
    if verdict.explanation is not None:
        assert set(verdict.explanation.cited_ids()) <= {e.id for e in verdict.evidence}
    assert any(f.summary.startswith("[I1]") for f in verdict.findings)


def test_the_bounded_setting_asks_for_gold_evidence_in_one_line() -> None:
    result = CliRunner().invoke(app, ["check", "--config", "agentfact-bounded", "--text", "A claim.", "--backend", "local"])
    assert result.exit_code == 2
    said = " ".join(result.output.split())
    assert "reasons over a data set's own evidence, and none came with sample" in said and "Traceback" not in said


def test_check_needs_a_text_or_a_recorded_claim() -> None:
    result = CliRunner().invoke(app, ["check", "--config", "check"])
    assert result.exit_code == 2 and "--replay-mr2" in " ".join(result.output.split())
