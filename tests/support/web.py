"""Helpers for the web page's tests: the server on a free loopback port and headless Chromium through Playwright.

The server runs the real application (``debates.ui.web.server.build_server``, as ``m3d serve`` does)
in a thread of the test process, so a scripted model client can stand in for the backend.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import tempfile
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx
import pytest
import websockets

from debates.ui.web.server import build_server, loopback_socket, server_logging
from debates.ui.web.settings import WebSettings
from m3d_agents.backends.factory import BackendPool
from m3d_agents.evidence import Evidence
from m3d_agents.sample import Sample
from retrieval.report import EvidenceLog
from retrieval.runpath import RunRetrieval
from tests.support.paths import REPO
from tests.support.runs import VERITE_SPEC, verite_samples

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
ARTIFACTS = Path(os.environ.get("M3D_TEST_ARTIFACTS", REPO / "test-artifacts"))


def require_browser() -> None:
    """Skip where no Chromium is installed, except in CI, where a missing browser is a failure."""
    if CHROMIUM.is_file():
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the browser tests, but {CHROMIUM} is missing: scripts/install.sh installs it with apt")
    pytest.skip(f"the browser tests need Debian's Chromium at {CHROMIUM} (apt-get install chromium); CI installs it")


def settings_for(tmp: Path, factory: Callable[[], BackendPool], **changes: Any) -> WebSettings:
    settings = WebSettings(
        pool_factory=factory, backends=["scripted"], default_backend="scripted", run_roots=[tmp / "runs"],
        datasets={VERITE_SPEC: verite_samples()}, study_dir=tmp / "studies", upload_dir=tmp / "uploads",
    )
    (tmp / "runs").mkdir(exist_ok=True)
    (tmp / "uploads").mkdir(exist_ok=True)
    for key, value in changes.items():
        setattr(settings, key, value)
    return settings


@dataclass
class Served:
    base: str
    app: Any

    @property
    def live_debates(self) -> Any:
        return self.app.app.state.live_debates


def static_sources() -> RunRetrieval:
    """Evidence sources a test opens itself for a post: :class:`StaticEvidence` under a replay log."""
    return RunRetrieval(mode="replay", log=EvidenceLog("replay", "two items a test gives"), evidence_source=StaticEvidence())


class StaticEvidence:
    """An evidence source that returns the same two items: one kept, one filtered out by the reliability rule."""

    async def gather(self, sample: Sample, ledger: Any = None) -> list[Evidence]:
        return [
            Evidence(kind="web_page", url="https://news.example/sandy-photos", domain="news.example", reliability="reliable",
                     title="Hurricane Sandy: the photos that were not", text="The storm picture over the statue is a composite.",
                     reason="on topic, from a reliable outlet"),
            Evidence(kind="web_page", url="https://satire.example/sandy", domain="satire.example", reliability="satire",
                     title="Statue of Liberty joins the storm", text="The statue was seen surfing.", kept=False,
                     reason="satire site: left out by the reliability filter"),
        ]


@contextmanager
def running_server(settings: WebSettings) -> Iterator[Served]:
    """The application served on a free loopback port in a thread."""
    sock = loopback_socket()
    port = sock.getsockname()[1]
    server = build_server(settings, port)
    with server_logging((settings.token,) if settings.token else ()):
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        deadline = time.monotonic() + 20
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the web server did not start")
            time.sleep(0.02)
        try:
            yield Served(f"http://127.0.0.1:{port}", server.config.app)
        finally:
            server.should_exit = True
            thread.join(15)
            sock.close()


@contextmanager
def chromium() -> Iterator[Any]:
    """A headless Chromium with a fresh profile, driven by Playwright; yields a browser context."""
    require_browser()
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="m3d-chromium-")
    try:
        with sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                profile, executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_FLAGS,
                viewport={"width": 1280, "height": 900},
            )
            try:
                yield context
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def screenshot(page: Any, name: str) -> Path:
    """Save a full-page screenshot as a test artifact."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


LAYOUT_CHECK = """() => {
  // How a page fits its window: how far it is wider than the window, and every word that the layout broke
  // across two lines (a Range over one word then has more than one line box). Words are runs of letters, so a
  // path or an address may still wrap at its slashes and dots.
  const broken = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  const word = /[A-Za-z\u00C0-\u024F]{2,}/g;
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const parent = node.parentElement;
    if (!parent || parent.closest("script, style, [hidden], details:not([open]) > :not(summary)")) continue;
    if (!parent.getClientRects().length) continue;
    for (const found of node.textContent.matchAll(word)) {
      const range = document.createRange();
      range.setStart(node, found.index);
      range.setEnd(node, found.index + found[0].length);
      const lines = new Set(Array.from(range.getClientRects()).filter(r => r.width > 0).map(r => Math.round(r.top)));
      if (lines.size > 1) broken.push(found[0] + " in <" + parent.tagName.toLowerCase() + ">");
    }
  }
  return {overflow: document.documentElement.scrollWidth - window.innerWidth, broken: broken.slice(0, 20)};
}"""


def layout_problems(page: Any, widths: tuple[int, ...] = (1280, 800), name: str | None = None) -> dict[int, dict[str, Any]]:
    """The page at each window width (a screenshot of each under ``name``): its horizontal overflow in pixels and
    the words broken inside; a page that fits has ``{"overflow": 0, "broken": []}`` at every width."""
    found = {}
    for width in widths:
        page.set_viewport_size({"width": width, "height": 900})
        page.wait_for_timeout(50)
        found[width] = page.evaluate(LAYOUT_CHECK)
        if name is not None:
            screenshot(page, f"{name}-{width}")
    return found


def csrf_of(page: str) -> str:
    """The form token a page carries, as a browser would send it back."""
    found = re.search(r'name="csrf" value="([0-9a-f]+)"', page)
    assert found, "the page has no form token"
    return found.group(1)


def live_debate(
    served: Any, browser: httpx.Client, form: dict[str, str], files: dict[str, Any] | None = None,
    until: tuple[str, ...] = ("failed", "verdict"),
) -> tuple[str, list[dict[str, str]]]:
    """Start a live debate from the form, open its socket as the page does, and return its id and what it sent
    up to the first message whose type is in ``until`` (a saved debate sends ``saved`` after its verdict)."""
    token = csrf_of(browser.get("/live").text)
    started = browser.post("/live", data={"csrf": token, **form}, files=files)
    debate_id = started.headers["location"].rsplit("/", 1)[1]
    cookie = "; ".join(f"{k}={v}" for k, v in browser.cookies.items())

    async def messages() -> list[dict[str, str]]:
        seen: list[dict[str, str]] = []
        address = served.base.replace("http", "ws") + f"/live/{debate_id}/ws?csrf={token}"
        async with websockets.connect(address, origin=served.base, additional_headers={"cookie": cookie}) as socket:  # type: ignore[arg-type]
            while not seen or seen[-1]["type"] not in until:
                seen.append(json.loads(await asyncio.wait_for(socket.recv(), 30)))
        return seen

    return debate_id, asyncio.run(messages())
