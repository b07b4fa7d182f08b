"""End to end over HTTP: the real llama.cpp server with the packaged 270M model, through `m3d check`.

This is the same OpenAI-compatible code path that serves vLLM; only the URL differs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from m3d_agents.verdict import Verdict
from tests.support.paths import EXAMPLE_IMAGE, REPO

pytestmark = pytest.mark.integration


def run_m3d(*args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "debates", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def test_m3d_check_end_to_end_on_the_embedded_model() -> None:
    text = (REPO / "examples" / "sample.txt").read_text().strip()
    result = run_m3d("check", "--text", text, "--image", str(EXAMPLE_IMAGE), "--backend", "local", "--json")
    assert result.returncode == 0, result.stderr
    verdict = Verdict.model_validate(json.loads(result.stdout))
    assert verdict.backend == "local"
    assert verdict.abstained or verdict.label in {"real", "fake"}
    assert verdict.accounting.model_calls >= 1
    assert verdict.accounting.prompt_tokens > 0
    assert verdict.accounting.completion_tokens > 0


def test_m3d_check_reports_bad_input_clearly() -> None:
    result = run_m3d("check", "--text", "  ", "--backend", "local")
    assert result.returncode == 2
    assert "text" in result.stderr and "empty" in result.stderr


def test_dead_endpoint_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    config = tmp_path / "m3d.yaml"
    config.write_text("backends:\n  dead: {kind: vllm, base_url: 'http://127.0.0.1:9/v1', transport_retries: 0, restart_wait_s: 1, cache: false}\n")
    result = run_m3d("check", "--text", "a claim", "--backend", "dead", "--config-file", str(config))
    assert result.returncode == 2
    # Nothing listens there: the user is told the call waits for a server to start, then how long it waited.
    assert "refuses connections (nothing listens there yet" in result.stderr
    assert "refused connections for 1 s (the backend's restart_wait_s): is its server running at that address?" in result.stderr


def test_m3d_debate_async_end_to_end_on_the_embedded_model() -> None:
    text = (REPO / "examples" / "sample.txt").read_text().strip()
    result = run_m3d(
        "debate", "--config", "async-three", "--max-rounds", "1", "--text", text, "--image", str(EXAMPLE_IMAGE),
        "--backend", "local", "--json",
    )
    assert result.returncode == 0, result.stderr
    verdict = Verdict.model_validate(json.loads(result.stdout))
    assert verdict.config == "async-three"
    speakers = [t.speaker for t in verdict.transcript]
    assert speakers == ["agent_a", "agent_b", "agent_c"]
    assert all(t.stance in {"real", "fake"} or t.parse_error for t in verdict.transcript), "read, or the reason why not"
    assert verdict.accounting.model_calls >= 3
    assert verdict.abstained or verdict.label in {"real", "fake"}


def test_the_local_server_ends_with_its_parent_even_on_sigkill(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import signal
    import time

    script = (
        "from m3d_agents.backends.config import LocalServerSettings\n"
        "from m3d_agents.backends.local_server import LocalLlamaServer\n"
        "server = LocalLlamaServer(LocalServerSettings())\n"
        "server.start()\n"
        "print(server.process.pid, flush=True)\n"
        "import time; time.sleep(600)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    parent = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True, env=env)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            return
        with open(f"/proc/{child}/stat") as stat:
            if stat.read().split()[2] == "Z":
                return
        time.sleep(0.2)
    os.kill(child, signal.SIGKILL)
    raise AssertionError("the llama.cpp server outlived its parent")
