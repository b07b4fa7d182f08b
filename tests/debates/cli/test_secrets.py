"""Keys go only to their own host and never into output, logs, run folders or caches.

Keys sit in the environment (one under a name that does not look secret, known only because a
backend config names it in ``api_key_env``) and in config files. Errors are triggered on
purpose, against a server that echoes the key it received in its error message, as some
proxies do. Then every line printed, every log record and every file written is searched.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest
from typer.testing import CliRunner

from debates.cli.main import app
from m3d_agents.sample import Sample
from retrieval.config import RetrievalConfig
from retrieval.fetch import Fetcher, FetchLimits
from retrieval.guards import FetchGuard
from retrieval.pipeline import EvidencePipeline
from retrieval.providers.serpapi_lens import SerpApiGoogleLens
from tests.support.fault_server import FaultServer
from tests.support.paths import EXAMPLE_IMAGE, REPO

KEYS = {
    "OPENAI_API_KEY": "sk-test-OPENAISECRET1234567890",
    "M3D_GATEWAY": "gw-ENVSECRET-789xyzuvw",
    "SERPAPI_API_KEY": "serp-SECRET-456abcdef",
    "SERPER_API_KEY": "serper-SECRET-789abcdef",
    "GOOGLE_VISION_API_KEY": "vision-SECRET-012abcdef",
}
IN_FILES = {"literal.yaml": "file-SECRET-345abcdef", "pasted.yaml": "sk-test-PASTEDSECRET0123456789"}
ALL = [*KEYS.values(), *IN_FILES.values()]


@pytest.fixture
def servers() -> Iterator[dict[str, FaultServer]]:
    with FaultServer(rate=0.0) as local, FaultServer(rate=0.0) as vllm, FaultServer(rate=0.0) as good, \
            FaultServer(rate=0.0) as echo:
        echo.refuse_with = (401, "Incorrect API key provided")
        echo.echo_credentials = True
        yield {"local": local, "vllm": vllm, "good": good, "echo": echo}


@pytest.fixture
def workspace(tmp_path: Path, servers: dict[str, FaultServer], monkeypatch: pytest.MonkeyPatch) -> Path:
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("M3D_LOCAL_BASE_URL", servers["local"].base_url)
    monkeypatch.delenv("M3D_VLLM_API_KEY", raising=False)
    echo, good = servers["echo"].base_url, servers["good"].base_url
    (tmp_path / "m3d.yaml").write_text(
        "backends:\n"
        f"  echo: {{kind: openai, base_url: '{echo}', api_key_env: M3D_GATEWAY, transport_retries: 0}}\n"
        f"  echo-openai: {{kind: openai, base_url: '{echo}', transport_retries: 0}}\n"
        f"  echo-sdk: {{kind: openai, base_url: '{echo}', api_key_env: M3D_GATEWAY, transport: sdk, transport_retries: 0}}\n"
        f"  good: {{kind: vllm, base_url: '{good}', vision: false}}\n"
        f"  vllm: {{kind: vllm, base_url: '{servers['vllm'].base_url}', vision: false}}\n"
    )
    (tmp_path / "literal.yaml").write_text(f"backends:\n  gpt: {{kind: openai, api_key: {IN_FILES['literal.yaml']}}}\n")
    (tmp_path / "pasted.yaml").write_text(f"backends:\n  gpt: {{kind: openai, api_key_env: {IN_FILES['pasted.yaml']}}}\n")
    (tmp_path / "posts.jsonl").write_text("".join(json.dumps({"id": f"p{i}", "text": f"post {i}", "label": "fake"}) + "\n"
                                                  for i in range(3)))
    return tmp_path


def leaked(text: str) -> list[str]:
    return [key for key in ALL if key in text]


def files_with_keys(root: Path) -> list[str]:
    found = []
    for path in root.rglob("*"):
        if path.is_file() and path.name not in IN_FILES:
            data = path.read_bytes()
            found += [f"{path.relative_to(root)}: {key}" for key in ALL if key.encode() in data]
    return found


def m3d(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, list(args))
    assert isinstance(result.exception, SystemExit) or result.exception is None, repr(result.exception)
    return result.exit_code, result.output


def m3d_process(cwd: Path, *args: str) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-m", "debates", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    return done.returncode, done.stdout + done.stderr


EVALUATE = ["evaluate", "--dataset", "jsonl:posts.jsonl", "-o", "text=text", "-o", "label=label", "-o", "id=id",
            "--config-file", "m3d.yaml", "--no-progress"]


def test_keys_appear_in_no_output_log_run_folder_or_cache(workspace: Path, servers: dict[str, FaultServer]) -> None:
    outputs: list[str] = []
    for backend in ("echo", "echo-openai", "echo-sdk"):
        code, output = m3d("check", "--text", "storm over the city", "--backend", backend, "--config-file", "m3d.yaml")
        assert code == 2 and "401" in output, output
        outputs.append(output)
    code, output = m3d("check", "--text", "storm over the city", "--image", str(EXAMPLE_IMAGE), "--backend", "good",
                       "--config-file", "m3d.yaml", "--json")
    assert code == 0, output
    outputs.append(output)
    for config_file in IN_FILES:
        code, output = m3d("check", "--text", "x", "--config-file", config_file)
        assert code == 2 and "backends.gpt.api_key" in output, output
        outputs.append(output)
    code, output = m3d_process(workspace, "--debug", "debate", "--config", "async", "--text", "storm", "--backend", "echo",
                               "--config-file", "m3d.yaml")
    assert code == 2 and "Traceback" in output, output
    outputs.append(output)
    code, output = m3d_process(workspace, "debate", "--config", "async", "--text", "storm", "--backend", "echo",
                               "--config-file", "m3d.yaml")
    assert code == 2 and "Traceback" not in output and len(output.strip().splitlines()) == 1, output
    outputs.append(output)
    for config in ("check", "async"):
        code, output = m3d_process(workspace, *EVALUATE, "--config", config, "--backend", "echo", "--out", f"runs/{config}")
        assert code == 1 and "every sample failed" in output, "a run in which every sample failed says so and exits 1"
        outputs.append(output)
        rows = [json.loads(line) for line in (workspace / "runs" / config / "results.jsonl").read_text().splitlines()]
        assert [r["status"] for r in rows] == ["error"] * 3 and all("401" in r["error"]["message"] for r in rows)
    assert not leaked("\n".join(outputs)), leaked("\n".join(outputs))
    assert not files_with_keys(workspace)
    assert any((workspace / "cache").rglob("*")), "the successful call should have filled the response cache"


def test_m3d_backends_sends_each_backend_only_its_own_key(workspace: Path, servers: dict[str, FaultServer]) -> None:
    code, output = m3d("backends", "--config-file", "m3d.yaml", "--json")
    assert code == 0, output
    no_key = "Bearer EMPTY"  # what a backend without a key sends (vLLM's convention)
    assert servers["local"].authorization == [no_key]
    assert servers["vllm"].authorization == [no_key]
    assert servers["good"].authorization == [no_key]
    sent_to_echo = sorted(a or "" for a in servers["echo"].authorization)
    assert sent_to_echo == sorted([f"Bearer {KEYS['M3D_GATEWAY']}"] * 2 + [f"Bearer {KEYS['OPENAI_API_KEY']}"])
    assert not leaked(output)


async def test_a_provider_key_never_reaches_failures_or_logs(workspace: Path, caplog: pytest.LogCaptureFixture) -> None:
    async def private_answers(host: str, port: int) -> list[str]:
        return ["10.0.0.7"]

    fetcher = Fetcher(FetchLimits(timeout_s=3), FetchGuard(resolver=private_answers))
    config = RetrievalConfig(public_image_url="https://images.example.org/{sha256}.jpg")
    pipeline = EvidencePipeline(reverse=[SerpApiGoogleLens(fetcher)], fetcher=fetcher, config=config)
    sample = Sample(text="storm over the city", images=[EXAMPLE_IMAGE])
    with caplog.at_level(logging.DEBUG):
        result = await pipeline.collect(sample)
    await pipeline.close()
    assert result.failures and "refused" in result.failures[0]
    text = "\n".join(result.failures) + "\n" + caplog.text
    assert "api_key=***" in text and not leaked(text)
