"""The real vLLM server for the tests marked ``vllm``: one per session, on the tiny Qwen3-VL built with seed 0.

Its start-up time and memory (resident, all its processes, at the peak seen) are printed at the
end of the run and written to ``test-artifacts/vllm-server.json``, so every CI log carries them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.support.paths import REPO
from tests.support.vllm_server import VllmServer, require_vllm, tiny_checkpoint

STARTED: list[VllmServer] = []


@pytest.fixture(scope="session")
def vllm_server() -> Iterator[VllmServer]:
    require_vllm()
    server = VllmServer(tiny_checkpoint(0)).start()
    STARTED.append(server)
    try:
        yield server
    finally:
        server.measure()
        server.stop()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if not STARTED:
        return
    figures = [{"startup_s": round(s.startup_s, 1), "peak_rss_gib": round(s.peak_rss_bytes / 2**30, 2)} for s in STARTED]
    main = figures[0]
    terminalreporter.write_line(f"vLLM CPU server (tiny Qwen3-VL): started in {main['startup_s']} s, "
                                f"{main['peak_rss_gib']} GiB resident at the peak (all its processes)")
    artifacts = Path(os.environ.get("M3D_TEST_ARTIFACTS", REPO / "test-artifacts"))
    try:
        artifacts.mkdir(parents=True, exist_ok=True)
        (artifacts / "vllm-server.json").write_text(json.dumps(figures, indent=1), encoding="utf-8")
    except OSError:
        pass
