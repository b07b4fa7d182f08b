"""One configuration of every strategy, end to end on the real vLLM server: each ends with a verdict,
or with an abstention that says why, and the accounting is the server's.

The model has random weights, so what is checked is the path (requests vLLM accepts, structured
answers its grammar enforces, parsing, turn order, accounting), not the quality of any verdict.
Retrieval is off (no evidence source): the tests reach loopback only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from debates.session import run_sample
from m3d_agents.backends.config import BackendConfig, BackendSettings
from m3d_agents.backends.factory import BackendPool
from debates.strategies.factguard.diagnostics import FactGuardDiagnostics
from m3d_agents.sample import Sample, VideoRef
from m3d_agents.verdict import Verdict
from tests.support.paths import EXAMPLE_IMAGE, REPO
from tests.support.vllm_server import MODEL_NAME, VllmServer

pytestmark = [pytest.mark.vllm, pytest.mark.filterwarnings("ignore:Resolved model mismatch")]

VIDEO = REPO / "examples" / "video"
LABELS = {"real", "fake", "original", "textual_veracity_distortion", "visual_veracity_distortion",
          "cross_modal_consistency_distortion", "true", "false", "unproven", "mixture", "outdated"}


def pool_for(server: VllmServer) -> BackendPool:
    tiny = BackendConfig(kind="vllm", base_url=server.base_url, model=MODEL_NAME, cache=False, max_tokens=256,
                         transport_retries=1, timeout_s=120)
    return BackendPool(BackendSettings(backend="tiny", backends={"tiny": tiny}))


def post() -> Sample:
    return Sample(text=(REPO / "examples" / "sample.txt").read_text().strip(), images=[EXAMPLE_IMAGE])


def video_post() -> Sample:
    return Sample(text=(VIDEO / "caption.txt").read_text().strip(),
                  video=VideoRef(path=VIDEO / "flood.mp4", transcript=(VIDEO / "transcript.txt").read_text().strip()))


def settled(verdict: Verdict) -> None:
    turns = "\n".join(f"{t.speaker}: {t.parse_error or 'read'} | {t.text[:200]}" for t in verdict.transcript)
    if verdict.abstained:
        assert verdict.abstain_reason, turns
    else:
        assert verdict.label in LABELS, turns
    assert verdict.backend == "tiny"
    assert verdict.accounting.model_calls >= 1 and verdict.accounting.prompt_tokens > 0, turns


@pytest.mark.parametrize("config", ["async", "agentm3d", "t2agent", "agentfact", "check"])
async def test_a_strategy_runs_to_a_verdict_or_a_reasoned_abstention(vllm_server: VllmServer, config: str) -> None:
    pool = pool_for(vllm_server)
    try:
        verdict = await run_sample(config, post(), pool, backend="tiny")
    finally:
        await pool.close()
    settled(verdict)
    assert verdict.config == config


async def test_factguard_runs_on_the_video_post(vllm_server: VllmServer) -> None:
    pool = pool_for(vllm_server)
    try:
        verdict = await run_sample("factguard", video_post(), pool, backend="tiny")
    finally:
        await pool.close()
    settled(verdict)
    assert isinstance(verdict.diagnostics, FactGuardDiagnostics) and verdict.diagnostics.video_seen is True


def test_m3d_check_on_the_vllm_backend(vllm_server: VllmServer, tmp_path: Path) -> None:
    config = tmp_path / "m3d.yaml"
    config.write_text(f"backends:\n  tiny: {{kind: vllm, base_url: '{vllm_server.base_url}', model: {MODEL_NAME}}}\n")
    result = subprocess.run(
        [sys.executable, "-m", "debates", "check", "--text", post().text, "--image", str(EXAMPLE_IMAGE),
         "--backend", "tiny", "--config-file", str(config), "--retrieval", "off", "--json"],
        capture_output=True, text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert result.returncode == 0, result.stderr[-2000:]
    settled(Verdict.model_validate(json.loads(result.stdout)))
