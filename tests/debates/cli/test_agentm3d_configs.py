"""Every AgentM3D configuration runs from the command line against the loopback model server."""

from __future__ import annotations

from pathlib import Path

import pytest



# --- every configuration from the command line ---------------------------------------------------


@pytest.mark.parametrize("name", ["standard", "bon", "mmd-agent", "mmd-agent-bon", "agentm3d"])
def test_every_selector_config_runs_from_the_command_line(name: str, tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from debates.cli.main import app
    from m3d_agents.diagnostics import DebateDiagnostics
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
    escalated = name in ("bon", "mmd-agent-bon", "agentm3d")
    assert diagnostics.selection.escalated is escalated
    assert server.requests and all(r["model"] for r in server.requests)
