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


def test_evaluate_waits_for_a_server_that_comes_up_and_notes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json
    import threading

    from tests.support.openai_stub_server import completion_body
    from tests.support.vllm_server import free_port

    port = free_port()
    (tmp_path / "m3d.yaml").write_text(
        f"backends:\n  later: {{kind: vllm, base_url: 'http://127.0.0.1:{port}/v1', transport_retries: 0, restart_wait_s: 60,"
        " cache: false, vision: false}\n"
    )
    (tmp_path / "posts.jsonl").write_text("".join(json.dumps({"id": f"p{i}", "text": f"Post {i}", "label": "real"}) + "\n"
                                                  for i in range(2)))
    answer = json.dumps({"rationale": "the post is plain", "label": "real", "confidence": 0.7})
    servers: list[StubOpenAIServer] = []
    timer = threading.Timer(1.5, lambda: servers.append(
        StubOpenAIServer(lambda body, n: (200, completion_body(answer), 0.0), port=port).__enter__()))
    monkeypatch.chdir(tmp_path)
    timer.start()
    try:
        result = CliRunner().invoke(app, [
            "evaluate", "--config", "check", "--dataset", "jsonl:posts.jsonl", "-o", "text=text", "-o", "label=label",
            "-o", "id=id", "--backend", "later", "--config-file", "m3d.yaml", "--out", "run", "--no-progress",
        ], env={"COLUMNS": "400", "TERM": "dumb"})
    finally:
        timer.join()
        for server in servers:
            server.__exit__(None, None, None)
    output = " ".join(result.output.split())
    assert result.exit_code == 0, result.output
    url = f"http://127.0.0.1:{port}/v1/chat/completions"
    # The run's notes, not a log warning: what the user reads while the run waits, and when it goes on.
    assert (f"the model endpoint {url} refuses connections (nothing listens there yet: a server starting or restarting); "
            "calls wait for it, up to 60 s each (the backend's restart_wait_s)") in output
    assert "WARNING" not in output
    assert f"the model endpoint {url} answers again, after" in output
    assert "2/2 samples done" in output and "errors 0" in output
