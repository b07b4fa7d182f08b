"""The real vLLM server for the tests marked ``vllm``: one per session, on the tiny Qwen3-VL built with seed 0.

Its start-up time and memory (resident, all its processes, at the peak seen) are printed at the
end of the run and written to ``test-artifacts/vllm-server.json``, so every CI log carries them.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterator

import pytest

from tests.support.paths import REPO
from tests.support.vllm_server import FIGURES_KEY, SERVER_FIGURES, VllmServer, require_vllm, tiny_checkpoint

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


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Hand the figures to whoever prints the summary: this process, or the xdist controller, which
    never runs these tests itself and so never sees the server."""
    if not STARTED:
        return
    figures = [{"startup_s": round(s.startup_s, 1), "peak_rss_gib": round(s.peak_rss_bytes / 2**30, 2)} for s in STARTED]
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput[FIGURES_KEY] = figures
    else:
        SERVER_FIGURES.extend(figures)
    artifacts = Path(os.environ.get("M3D_TEST_ARTIFACTS", REPO / "test-artifacts"))
    try:
        artifacts.mkdir(parents=True, exist_ok=True)
        (artifacts / "vllm-server.json").write_text(json.dumps(figures, indent=1), encoding="utf-8")
    except OSError:
        pass
