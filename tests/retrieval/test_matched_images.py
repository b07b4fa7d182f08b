"""Matched images downloaded for Agent-IR: through the fetch guards and their limits, kept in the evidence
store so a replay shows the model the same image, and logged in the sample's evidence report."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from m3d_agents.errors import BackendError
from m3d_agents.evidence import Evidence
from m3d_agents.media.images import decode_image
from m3d_agents.sample import Sample
from retrieval.fetch import FetchError, Fetcher, FetchLimits
from retrieval.guards import FetchGuard, FetchRefused, OfflineGuard
from retrieval.pipeline import EvidencePipeline
from retrieval.report import IMAGES, EvidenceLog
from retrieval.store import EvidenceStore
from tests.support.page_server import MATCHED_SIZE, PageServer

SAMPLE = Sample(id="s1", text="a post")


@pytest.fixture
def server() -> Iterator[PageServer]:
    with PageServer() as running:
        yield running


async def test_an_image_is_fetched_as_bytes_and_a_page_is_not_taken_for_one(server: PageServer) -> None:
    fetcher = Fetcher(guard=FetchGuard(allow_loopback=True))
    try:
        image = await fetcher.get_image(f"{server.base}/gallery/match.jpg")
        assert image.content_type == "image/jpeg" and decode_image(image.data(), image.url).image.size == MATCHED_SIZE
        with pytest.raises(FetchError, match="content type 'text/html'"):
            await fetcher.get_image(f"{server.base}/big")
    finally:
        await fetcher.close()
    small = Fetcher(FetchLimits(max_bytes=100), guard=FetchGuard(allow_loopback=True))
    try:
        with pytest.raises(FetchError, match="over the limit of 100 bytes"):
            await small.get_image(f"{server.base}/gallery/match.jpg")
    finally:
        await small.close()
    guarded = Fetcher()
    try:
        with pytest.raises(FetchRefused):
            await guarded.get_image(f"{server.base}/gallery/match.jpg")
    finally:
        await guarded.close()


async def test_a_matched_image_is_recorded_then_replayed_without_the_network(server: PageServer, tmp_path: Path) -> None:
    url = f"{server.base}/gallery/match.jpg"
    log = EvidenceLog("live")
    store = EvidenceStore(tmp_path / "evidence.sqlite", "record")
    live = EvidencePipeline(fetcher=Fetcher(guard=FetchGuard(allow_loopback=True)), store=store, log=log)
    first = await live.matched_image(url, SAMPLE)
    await live.close()
    report = log.report(SAMPLE.id)
    images = next(p for p in report.providers if p.provider == IMAGES)
    assert images.calls == 1 and report.network_fetches == 1

    replay_store = EvidenceStore(tmp_path / "evidence.sqlite", "replay")
    offline = EvidencePipeline(fetcher=Fetcher(guard=OfflineGuard()), store=replay_store)
    try:
        again = await offline.matched_image(url, SAMPLE)
        assert again.data() == first.data()
        with pytest.raises(BackendError):
            await offline.matched_image(f"{server.base}/gallery/never-recorded.jpg", SAMPLE)
    finally:
        await offline.close()
    assert sum(1 for r in server.requests if r["path"].endswith(".jpg")) == 1


def test_the_evidence_report_counts_kept_pages_and_the_undated_ones() -> None:
    from datetime import date

    log = EvidenceLog("live")
    log.evidence(SAMPLE.id, [
        Evidence(kind="web_page", url="https://a.example/1", text="dated", published=date(2023, 1, 1)),
        Evidence(kind="web_page", url="https://a.example/2", text="undated"),
        Evidence(kind="reverse_image", text="best guess: a ferry"),
        Evidence(kind="web_page", url="https://a.example/3", text="later", kept=False, reason="dropped by leakage rule undated: x"),
    ])
    report = log.report(SAMPLE.id)
    assert (report.kept, report.pages_kept, report.undated_pages_kept, report.dropped_why) == (3, 2, 1, {"undated": 1})
