"""The example video post through `m3d check --config factguard` on the embedded 270M model, end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from m3d_agents.verdict import Verdict
from tests.support.paths import REPO

pytestmark = pytest.mark.integration


def test_the_example_video_post_gets_a_verdict_or_a_reasoned_abstention(tmp_path) -> None:  # type: ignore[no-untyped-def]
    video = REPO / "examples" / "video"
    # The built-in factguard configuration with short turns and no re-asking: the small model tends to ramble
    # to its token limit, and CI time is better spent on the path than on the length of its answers.
    config = tmp_path / "factguard-smoke.yaml"
    config.write_text((REPO / "debates" / "configs" / "factguard.yaml").read_text()
                      + "parse_retries: 0\nmax_tokens: 64\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-m", "debates", "check", "--config", str(config), "--video", str(video / "flood.mp4"),
         "--transcript", (video / "transcript.txt").read_text().strip(), "--text", (video / "caption.txt").read_text().strip(),
         "--backend", "local", "--retrieval", "off", "--json"],
        capture_output=True, text=True, timeout=900, env=env,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    verdict = Verdict.model_validate(json.loads(result.stdout))
    assert verdict.config == "factguard" and verdict.backend == "local"
    assert verdict.label in {"real", "fake"} or (verdict.abstained and verdict.abstain_reason)
    assert verdict.diagnostics.video_seen is True and verdict.accounting.model_calls >= 1
    assert verdict.transcript[0].speaker == "verifier"
