"""``benchmarks/gpu_check.py --tiny``: the GPU check's every step on the CPU, so the script is ready for the first GPU."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.support.paths import REPO

pytestmark = pytest.mark.train
pytest.importorskip("trl")

LINES = [
    "GPU: none", "first prompt tokens: ", "first prompt image tokens: ",
    "rollout s (batched, up to 8 turns a generate call): ", "rollout s (sequential, one rollout at a time): ",
    "step s (batched rollouts;", "step s (sequential rollouts;", "peak GPU memory GiB: n/a on the CPU",
    "estimate GiB: ", "estimate GiB before loading (m3d train's check", "measured / estimate: n/a on the CPU",
    "sft row tokens: ", "sft step s: ", "sft peak GPU memory GiB: ", "sft estimate GiB: ", "sft measured / estimate: ",
    "learned detector images per s (one-layer ViT, CPU, 1280x720", "forensic tools images per s (", "total s: ",
]


def test_the_gpu_check_prints_every_figure_on_the_cpu_with_tiny() -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO), "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, str(REPO / "benchmarks" / "gpu_check.py"), "--tiny"], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = done.stdout.splitlines()
    for start in LINES:
        assert any(line.startswith(start) for line in printed), f"no line starts with {start!r}:\n{done.stdout[-3000:]}"
    rollouts = next(line for line in printed if line.startswith("rollout s (batched"))
    assert rollouts.endswith("(1 generate call of 8 turns)"), "the eight first turns of the group in one generate call"
