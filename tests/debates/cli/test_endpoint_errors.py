"""A failing model endpoint ends ``m3d check`` with one line naming the endpoint, on either transport."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from debates.cli.main import app
from tests.support.openai_stub_server import Reply, StubOpenAIServer

KEY = "sk-test-CLI-SECRET"


@pytest.mark.parametrize("transport", ["http", "sdk"])
@pytest.mark.parametrize("reply, expected", [
    (Reply(200, b"<html>proxy error</html>"), "did not answer after 2 attempts (sent a body that is not JSON"),
    (Reply(200, b"<html>proxy error</html>", content_type="text/html"), "did not answer after 2 attempts (sent a body that is not JSON"),
    (Reply(401, {"error": {"message": f"Incorrect API key provided: Bearer {KEY}"}}), "refused the request (401): Incorrect API key"),
    (Reply(503, {"error": {"message": "overloaded"}}, headers={"Retry-After": "0"}), "did not answer after 2 attempts (HTTP 503: overloaded)"),
], ids=["not-json", "html-page", "401-echoing-the-key", "503"])
def test_one_line_no_traceback_no_key(tmp_path: Path, transport: str, reply: Reply, expected: str) -> None:
    with StubOpenAIServer(lambda body, n: reply) as server:
        config = tmp_path / "m3d.yaml"
        config.write_text(
            "backends:\n"
            f"  stub: {{kind: vllm, base_url: '{server.base_url}', transport: {transport}, transport_retries: 1,"
            " cache: false, vision: false}\n"
        )
        result = CliRunner().invoke(
            app, ["check", "--text", "hello", "--backend", "stub", "--config-file", str(config)],
            env={"M3D_VLLM_API_KEY": KEY, "COLUMNS": "400", "TERM": "dumb"},
        )
    output = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert output.startswith(f"error: the model endpoint {server.base_url}/chat/completions ")
    assert expected in output
    assert KEY not in result.output
