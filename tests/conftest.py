from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from tests.support.vllm_server import FIGURES_KEY, SERVER_FIGURES

# Wall-clock deadlines make property tests flaky on busy shared machines; behaviour is what we test.
settings.register_profile("m3d", deadline=None)
settings.load_profile("m3d")

# pytest-xdist gives its workers the controller's terminal size as COLUMNS and LINES; the command
# line's consoles would pin that width when first imported, whatever a test's own environment says.
for _variable in ("COLUMNS", "LINES"):
    os.environ.pop(_variable, None)


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep every response cache and config lookup of a test inside its own temporary folder."""
    monkeypatch.setenv("M3D_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("M3D_BACKEND", raising=False)
    monkeypatch.delenv("M3D_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True)
def no_internet(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests talk to loopback only. Configurations that ask for retrieval run in record mode by
    default, so the providers that need no key are pointed at the discard port of loopback, which
    the fetch guards refuse before connecting (a test that serves providers itself sets its own
    endpoints), and DuckDuckGo, whose library connects by itself, answers with an error."""
    for variable in ("GOOGLE_VISION_API_KEY", "SERPAPI_API_KEY", "SERPER_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("M3D_WIKIPEDIA_ENDPOINT", "http://127.0.0.1:9/w/api.php")

    def refuse(self: object, query: str, limit: int) -> list[object]:
        from m3d_agents.errors import BackendError

        raise BackendError("tests never reach DuckDuckGo")

    monkeypatch.setattr("retrieval.providers.duckduckgo.DuckDuckGoSearch._search", refuse)


SHARED_SERVERS = ("vllm", "ray")
"""Markers of tests that start one heavy server for the whole session (a vLLM engine, a Ray cluster):
under pytest-xdist each kind runs on a single worker, so the run starts it once, not once per worker."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for marker in SHARED_SERVERS:
            if item.get_closest_marker(marker) is not None:
                item.add_marker(pytest.mark.xdist_group(marker))


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:
    """An xdist worker is done: keep the vLLM server figures it measured (see tests/vllm/conftest.py)."""
    SERVER_FIGURES.extend(getattr(node, "workeroutput", {}).get(FIGURES_KEY, []))


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for figures in SERVER_FIGURES[:1]:
        terminalreporter.write_line(f"vLLM CPU server (tiny Qwen3-VL): started in {figures['startup_s']} s, "
                                    f"{figures['peak_rss_gib']} GiB resident at the peak (all its processes)")
