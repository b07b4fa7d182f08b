"""``m3d backends`` probes each backend with that backend's own key and no other."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from debates.cli.main import app
from m3d_agents.backends.transports.retry import NO_KEY
from tests.support.openai_stub_server import StubOpenAIServer, completion_body

OPENAI_KEY = "sk-test-OPENAI-SECRET"
VLLM_KEY = "vllm-test-SECRET"


def probe_header(server: StubOpenAIServer) -> list[str | None]:
    return [next((v for k, v in h.items() if k.lower() == "authorization"), None) for h in server.probes]


def test_each_probe_carries_only_its_own_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    servers = {name: StubOpenAIServer(lambda body, n: (200, completion_body("ok"), 0.0)) for name in ("local", "vllm", "openai", "gpu")}
    for server in servers.values():
        server.__enter__()
    try:
        config = tmp_path / "m3d.yaml"
        config.write_text(
            "backends:\n"
            f"  openai: {{kind: openai, base_url: '{servers['openai'].base_url}'}}\n"
            f"  gpu: {{kind: vllm, base_url: '{servers['gpu'].base_url}'}}\n"
        )
        env = {
            "OPENAI_API_KEY": OPENAI_KEY,
            "M3D_VLLM_API_KEY": VLLM_KEY,
            "M3D_LOCAL_BASE_URL": servers["local"].base_url,
            "M3D_VLLM_BASE_URL": servers["vllm"].base_url,
            "M3D_BACKEND": "",
        }
        for name in ("NO_PROXY", "no_proxy"):
            monkeypatch.setenv(name, "127.0.0.1,localhost")
        result = CliRunner().invoke(app, ["backends", "--config-file", str(config), "--json"], env=env)
    finally:
        for server in servers.values():
            server.__exit__(None, None, None)
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert {name: rows[name]["status"] for name in servers} == dict.fromkeys(servers, "answers")
    assert probe_header(servers["local"]) == [f"Bearer {NO_KEY}"]
    assert probe_header(servers["vllm"]) == [f"Bearer {VLLM_KEY}"]
    assert probe_header(servers["gpu"]) == [f"Bearer {VLLM_KEY}"]
    assert probe_header(servers["openai"]) == [f"Bearer {OPENAI_KEY}"]
    assert OPENAI_KEY not in result.output and VLLM_KEY not in result.output


def test_an_openai_backend_without_a_key_is_not_probed(tmp_path: Path) -> None:
    with StubOpenAIServer(lambda body, n: (200, completion_body("ok"), 0.0)) as server:
        config = tmp_path / "m3d.yaml"
        config.write_text(f"backends:\n  openai: {{kind: openai, base_url: '{server.base_url}', api_key_env: NO_SUCH_KEY}}\n")
        result = CliRunner().invoke(
            app, ["backends", "--config-file", str(config), "--json"],
            env={"M3D_LOCAL_BASE_URL": server.base_url, "M3D_VLLM_BASE_URL": server.base_url, "NO_SUCH_KEY": ""},
        )
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["openai"]["status"] == "no key in NO_SUCH_KEY"
    assert len(server.probes) == 2


def test_a_backend_that_refuses_connections_shows_how_long_a_call_waits(tmp_path: Path) -> None:
    from tests.support.vllm_server import free_port

    config = tmp_path / "m3d.yaml"
    config.write_text(f"backends:\n  gpu: {{kind: vllm, base_url: 'http://127.0.0.1:{free_port()}/v1', restart_wait_s: 120}}\n")
    with StubOpenAIServer(lambda body, n: (200, completion_body("ok"), 0.0)) as server:
        result = CliRunner().invoke(app, ["backends", "--config-file", str(config), "--json"],
                                    env={"M3D_LOCAL_BASE_URL": server.base_url, "M3D_VLLM_BASE_URL": server.base_url})
    rows = {row["name"]: row for row in json.loads(result.stdout)}
    assert rows["gpu"]["status"].startswith("no answer (ConnectError")
    assert rows["gpu"]["status"].endswith("; a call waits up to 120 s for it to start (restart_wait_s)")
    assert rows["gpu"]["restart_wait_s"] == 120 and rows["vllm"]["restart_wait_s"] == 300
    assert rows["vllm"]["status"] == "answers"
