"""Every AgentM3D configuration runs from the command line against the loopback model server."""

from __future__ import annotations

from pathlib import Path

import pytest



# --- every configuration from the command line ---------------------------------------------------


@pytest.mark.parametrize("name", ["standard", "bon", "mmd-agent", "mmd-agent-bon", "mmd-agent-decoupled", "mmd-agent-decoupled-bon", "agentm3d"])
def test_every_selector_config_runs_from_the_command_line(name: str, tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from debates.cli.main import app
    from debates.debate_engine.diagnostics import DebateDiagnostics
    from m3d_agents.verdict import Verdict
    from tests.support.paths import REPO
    from tests.support.openai_stub_server import StubOpenAIServer, completion_body
    from tests.support.selector_script import stub_answer

    with StubOpenAIServer(lambda body, n: (200, completion_body(stub_answer(body)), 0.0)) as server:
        settings = tmp_path / "m3d.yaml"
        settings.write_text(f"backend: stub\nbackends:\n  stub: {{kind: vllm, model: test-model, base_url: '{server.base_url}', cache: false}}\n")
        result = CliRunner().invoke(app, [
            "debate", "--config", name, "--config-file", str(settings), "--json",
            "--text", (REPO / "examples" / "sample.txt").read_text().strip(), "--image", str(REPO / "examples" / "sandy_fake_29.jpg"),
        ])
    assert result.exit_code == 0, result.output
    verdict = Verdict.model_validate(json.loads(result.stdout))
    assert verdict.config == name and verdict.label == "fake"
    diagnostics = verdict.diagnostics
    assert isinstance(diagnostics, DebateDiagnostics)
    assert diagnostics.answer.model_dump() == {"taxonomy": "m3d", "label": "visual_veracity_distortion"}
    escalated = name in ("bon", "mmd-agent-bon", "mmd-agent-decoupled-bon", "agentm3d")
    assert diagnostics.selection.escalated is escalated
    assert diagnostics.planner_escalated == (True if name == "agentm3d" else None), "only a planner's decision counts"
    assert server.requests and all(r["model"] for r in server.requests)


def test_evaluate_reports_the_planners_escalation_in_its_summary_the_report_and_run_json(tmp_path: Path) -> None:
    """Two of the three posts are sent to best-of-N by the planner (the loopback planner escalates the
    posts that mention a storm or a horse): the run says 66.7% wherever it speaks of itself."""
    import json

    from typer.testing import CliRunner

    from debates.cli.main import app
    from tests.support.openai_stub_server import StubOpenAIServer, completion_body
    from tests.support.paths import REPO
    from tests.support.selector_script import stub_answer

    def answer(body: dict, n: int) -> tuple[int, dict, float]:
        text = stub_answer(body)
        if "[BON level-1]" in text and "lantern festival" in json.dumps(body):
            text = "The caption and the picture plainly agree. [BON level-0]"
        return 200, completion_body(text), 0.0

    fixture = REPO / "tests" / "fixtures" / "datasets" / "MMFakeBench_val" / "source" / "MMFakeBench_val.json"
    with StubOpenAIServer(answer) as server:
        settings = tmp_path / "m3d.yaml"
        settings.write_text(f"backend: stub\nbackends:\n  stub: {{kind: vllm, model: test-model, base_url: '{server.base_url}', cache: false}}\n")
        result = CliRunner().invoke(app, [
            "evaluate", "--config", "agentm3d", "--dataset", f"mmfakebench:{fixture}", "--config-file", str(settings),
            "--out", str(tmp_path / "run"), "--no-progress", "--concurrency", "1",
        ], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    line = "escalated to best-of-N: 66.7% (2 of 3 samples the planner saw)"
    assert line in result.output
    assert "| escalated to best-of-N by the planner (AgentM3D reports 69.1% on MMFakeBench, 77.2% on Combined) | 66.7% (2 of 3) |" \
        in (tmp_path / "run" / "report.md").read_text()
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["escalation"]["planned"] == 3 and run["escalation"]["escalated"] == 2
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["metrics"]["escalation"]["share"] == pytest.approx(2 / 3)
