"""The crash suite: hostile pages, images and videos, and parsers that crash, hang or allocate without end.

Every case ends, within the parser pool's limits, in a result or in one line that names the item
and the problem, never in a crash of the test process, a hang or an "unexpected" error. Inputs
are generated here; nothing large is committed.
"""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path
from typing import Iterator

import pytest
from PIL import Image

from debates.config_loader import load_config, with_overrides
from debates.session import RunSession
from m3d_agents.backends.factory import BackendPool
from m3d_agents.errors import InputError
from m3d_agents.isolation import IsolationSettings, ItemLost, ParserPool, using
from m3d_agents.media.images import load_image
from m3d_agents.media.video import overview_frames, probe, sample_frames
from m3d_agents.sample import InputLimits
from m3d_agents.tools.forensics.exif import file_metadata_fields
from m3d_agents.tools.forensics.fusion import run_forensics
from retrieval.config import RetrievalConfig
from retrieval.extract import ExtractedPage, has_claim_review, extract_page
from retrieval.evidence_steps import saved_page
from retrieval.pipeline import mr2_replay_pipeline
from retrieval.providers.mr2_trace import MR2Trace
from tests.support import hostile_inputs, hostile_parsers
from tests.support.hostile_inputs import ARTICLE, hostile_images, hostile_pages, hostile_videos, make_trace, write_huge_page
from tests.support.paths import shared_data
from tests.support.scripted import ScriptedClient, scripted_backend
from tests.support.videos import make_clip

LIMITS = IsolationSettings(workers=2, timeout_s=30, analysis_timeout_s=30, memory_mb=768)
"""The suite's pool: time enough for a busy machine; a hostile input that needs more is reported."""
STRICT = IsolationSettings(workers=3, timeout_s=3, analysis_timeout_s=3, memory_mb=512)
"""The test-only parsers' pool: a hang is reported after 3 s."""


@pytest.fixture(scope="module")
def shared_parsers() -> Iterator[ParserPool]:
    pool = ParserPool(LIMITS)
    hostile_parsers.warm(pool)
    yield pool
    pool.close()


@pytest.fixture
def parsers(shared_parsers: ParserPool) -> Iterator[ParserPool]:
    with using(shared_parsers):
        yield shared_parsers


@pytest.fixture
def strict() -> Iterator[ParserPool]:
    pool = ParserPool(STRICT)
    yield pool
    pool.close()


def one_line(text: str) -> bool:
    return "\n" not in text and "unexpected" not in text.lower() and "Traceback" not in text


# --- parsers that crash, hang or allocate ------------------------------------------------------


@pytest.mark.parametrize("failure", list(hostile_parsers.FAILURES))
async def test_a_page_parser_that_fails_costs_its_page_alone(parsers: ParserPool, strict: ParserPool, failure: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("retrieval.extract.page_from_body", hostile_parsers.page_or_failure)
    bad, good = f"https://{failure}.example/story", "https://news.example/story"
    with using(strict):
        with pytest.raises(ItemLost) as lost:
            await extract_page(ARTICLE, bad)
    words = hostile_parsers.FAILURES[failure][1]
    assert lost.value.line.startswith(f"page {bad} not read: the extractor {words}") and one_line(lost.value.line)
    assert (f"after {STRICT.timeout_s:g} s" in lost.value.line) == (failure == "hang")
    page = await extract_page(ARTICLE, good)
    assert "flood defences" in page.text, "the next page is read"


@pytest.mark.parametrize("failure", list(hostile_parsers.FAILURES))
def test_an_image_or_video_parser_that_fails_costs_that_file_alone(parsers: ParserPool, strict: ParserPool, failure: str,
                                                                  tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    function, words = hostile_parsers.FAILURES[failure]
    image = tmp_path / "post.png"
    Image.new("RGB", (32, 32), (200, len(failure), 10)).save(image)  # content of its own: prepared images are cached by it
    clip = make_clip(tmp_path / "clip.mp4", seconds=2)
    prepared = load_image(image, field="images[0]")
    with using(strict):
        monkeypatch.setattr("m3d_agents.media.images.decode_rgb", function)
        with pytest.raises(ItemLost) as decoding:
            load_image(tmp_path / "post.png", InputLimits(max_side=16), field="images[0]")
        monkeypatch.setattr("m3d_agents.tools.forensics.fusion.forensics_here", function)
        with pytest.raises(ItemLost) as analysing:
            run_forensics(prepared)
        monkeypatch.setattr("m3d_agents.media.video.read_info", function)
        with pytest.raises(ItemLost) as probing:
            probe(clip)
    assert str(decoding.value).startswith(f"images[0]: image {image} not read: the image decoder {words}")
    assert analysing.value.line.startswith(f"image {image} not read: the forensic tools {words}")
    assert str(probing.value).startswith(f"video.path: video {clip} not read: the video decoder {words}")
    monkeypatch.undo()
    assert probe(clip).duration_s > 0 and run_forensics(prepared), "the next files are read"


async def test_a_lost_page_is_named_in_the_evidence_report_and_the_verdict_and_the_run_goes_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("retrieval.extract.page_from_body", hostile_parsers.page_or_failure)
    make_trace(tmp_path, {"https://news.example/good": ARTICLE, "https://crash.example/a": ARTICLE,
                          "https://allocate.example/b": ARTICLE})
    pool = BackendPool()
    client = ScriptedClient(lambda messages, kwargs: '{"rationale": "read them", "label": "true", "confidence": 0.7}')
    pool.add(scripted_backend(client, name="scripted"))
    config = with_overrides(load_config("check"), parse_retries=0, isolation={"memory_mb": 512, "timeout_s": 300})
    async with RunSession(config, pool, backend="scripted", replay_mr2=tmp_path) as session:
        verdict = await session.run(session.trace_sample("1"))
    lines = ["page https://allocate.example/b not read: the extractor needed more than 512 MiB",
             "page https://crash.example/a not read: the extractor crashed (signal 11)"]
    assert verdict.label == "true" and not verdict.abstained
    assert verdict.evidence_report is not None and sorted(verdict.evidence_report.items_lost) == lines
    assert verdict.diagnostics is not None and sorted(verdict.diagnostics.items_lost) == lines
    assert all(line in " ".join(verdict.evidence_report.lines()) for line in lines)
    assert verdict.evidence_report.kept == 1 and "flood defences" in client.calls[0].prompt, "the good page was read"


def test_an_upload_that_crashes_the_decoder_never_takes_the_server_down(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import httpx

    from tests.support.runs import scripted_pool_factory, verite_responder
    from tests.support.web import csrf_of, running_server, settings_for

    factory, _ = scripted_pool_factory(verite_responder)
    crashing, fine = (tmp_path / f"{name}.png" for name in ("crashing", "fine"))
    Image.new("RGB", (24, 24), (1, 2, 3)).save(crashing)
    Image.new("RGB", (24, 24), (4, 5, 6)).save(fine)
    with running_server(settings_for(tmp_path, factory)) as served, httpx.Client(base_url=served.base, timeout=120) as browser:
        def post(path: Path) -> httpx.Response:
            form = {"csrf": csrf_of(browser.get("/live").text), "config": "check", "backend": "scripted", "text": "A post"}
            return browser.post("/live", data=form, files={"image": (path.name, path.read_bytes(), "image/png")})

        monkeypatch.setattr("m3d_agents.media.images.decode_rgb", hostile_parsers.crash)
        refused = post(crashing)
        monkeypatch.undo()
        accepted = post(fine)
    assert refused.status_code == 400 and "not read: the image decoder crashed (signal 11)" in refused.text
    assert accepted.status_code == 303, "the server lives on and takes the next post"


# --- hostile pages ------------------------------------------------------------------------------


async def test_hostile_pages_each_end_in_a_page_or_one_line_within_the_limits(parsers: ParserPool) -> None:
    pages = hostile_pages()
    with using(parsers):
        outcomes = await asyncio.gather(*(extract_page(body, f"https://hostile.example/{number}")
                                          for number, body in enumerate(pages.values())), return_exceptions=True)
    for (name, _body), outcome in zip(pages.items(), outcomes):
        if isinstance(outcome, ItemLost):
            assert outcome.line.endswith(f"the extractor timed out after {LIMITS.timeout_s:g} s"), (name, outcome.line)
        else:
            assert isinstance(outcome, ExtractedPage), (name, outcome)
    found = dict(zip(pages, outcomes))
    deep = found["JSON-LD nested 100,000 deep"]
    assert isinstance(deep, ExtractedPage) and deep.claim_review, "the deep JSON is skipped, the ClaimReview beside it read"
    assert isinstance(found["NUL bytes"], ExtractedPage) and "flood" in found["NUL bytes"].text


def test_json_nested_deep_in_a_page_is_skipped_not_a_recursion_error() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    claim = "<html><head><script type='application/ld+json'>{\"a\": " + "[" * 900 + "{\"@type\": \"ClaimReview\"}" + "]" * 900 + "}</script></head><body>claimreview</body></html>"
    assert has_claim_review(f"<html><head><script type='application/ld+json'>{deep}</script></head><body>ClaimReview</body></html>") is False
    assert has_claim_review(claim) is False, "nested past the bound: not read, rather than walked into a RecursionError"


def test_a_saved_page_is_cut_at_the_fetch_limit_before_it_is_read(tmp_path: Path) -> None:
    huge = write_huge_page(tmp_path / "huge.html", megabytes=50)
    body, problem = saved_page(huge, 5_000_000)
    assert body is not None and len(body) == 5_000_000 and problem == ""
    missing, why = saved_page(tmp_path / "gone.html", 5_000_000)
    assert missing is None and "cannot be read" in why


async def test_a_50_mb_page_in_a_trace_costs_its_parser_the_cut_only(tmp_path: Path, parsers: ParserPool) -> None:
    make_trace(tmp_path / "trace", {"https://big.example/page": b""})
    write_huge_page(tmp_path / "trace" / "queries_dataset" / "merge" / "inv" / "1" / "page0.html", megabytes=50)
    config = RetrievalConfig(max_pages=8, fetch={"max_bytes": 300_000}, summary={"enabled": False})
    pipeline = mr2_replay_pipeline(tmp_path / "trace", config=config)
    with using(parsers):
        result = await pipeline.collect(MR2Trace(tmp_path / "trace").sample("1"))
    kept = [e for e in result.evidence if e.url == "https://big.example/page"]
    assert kept and kept[0].kept and "flood defences" in kept[0].text and len(kept[0].text) <= config.max_page_chars


# --- hostile images -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(hostile_images()))
def test_hostile_images_are_read_or_refused_in_one_line(parsers: ParserPool, name: str, tmp_path: Path) -> None:
    path = tmp_path / "image.bin"
    path.write_bytes(hostile_images()[name])
    try:
        prepared = load_image(path, field="images[0]")
    except InputError as refused:
        assert refused.field == "images[0]" and one_line(str(refused)), str(refused)
        return
    assert prepared.image.mode == "RGB" and max(prepared.image.size) <= InputLimits().max_side
    for analysis in (lambda: run_forensics(prepared), lambda: file_metadata_fields(prepared)):
        try:
            assert analysis()
        except InputError as refused:
            assert one_line(str(refused)), str(refused)


def test_the_forensic_tools_decode_within_the_image_s_decode_budget(parsers: ParserPool, tmp_path: Path) -> None:
    photo = tmp_path / "large.jpg"
    Image.new("RGB", (6000, 4000), (90, 120, 150)).save(photo, quality=85)
    prepared = load_image(photo, InputLimits(max_decoded_pixels=4_000_000))
    results = run_forensics(prepared, ["ela", "jpeg"], maps=True)
    heatmap = results["ela"].heatmap
    assert heatmap is not None and heatmap.size <= 4_000_000, "decoded at a reduced scale, like the model's copy"
    assert "dct_periodicity" not in results["jpeg"].details, "no double-compression reading off a rescaled grid"
    flat = tmp_path / "flat.png"
    Image.new("L", (3000, 3000)).save(flat)
    over_budget = dataclasses.replace(load_image(flat), max_decoded_pixels=1_000_000)
    with pytest.raises(InputError, match=r"the forensic tools decode at most max_decoded_pixels \(1000000\)"):
        run_forensics(over_budget)


# --- hostile videos -----------------------------------------------------------------------------


def test_hostile_videos_are_read_or_refused_in_one_line(parsers: ParserPool, tmp_path: Path) -> None:
    limits = InputLimits(max_video_pixels=100_000)
    for name, path in hostile_videos(tmp_path).items():
        try:
            info = probe(path, limits)
            frames = overview_frames(path, 4, limits, info=info)
        except InputError as refused:
            assert refused.field == "video.path" and one_line(str(refused)), (name, str(refused))
            continue
        assert frames and all(max(f.image.size) <= limits.max_side for f in frames), name


def test_every_frame_is_held_to_the_pixel_limit_not_only_the_first(parsers: ParserPool, tmp_path: Path) -> None:
    growing = hostile_inputs.growing_video(tmp_path / "growing.ts")
    limits = InputLimits(max_video_pixels=100_000)
    info = probe(growing, limits)
    assert (info.width, info.height) == (64, 64), "the first frame passes"
    with pytest.raises(InputError, match=r"changes to 640x480 = 307200 pixels a frame at .* over the limit of 100000"):
        sample_frames(growing, 0.0, info.duration_s, 4, limits, info)


def test_absurd_declared_dimensions_are_refused_before_decoding(parsers: ParserPool, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"is 12288x12288 = 150994944 pixels a frame, over the limit"):
        probe(hostile_inputs.absurd_dimensions(tmp_path / "absurd.mkv"))


# --- the shared pages from many callers ---------------------------------------------------------


@pytest.mark.integration
async def test_the_shared_pages_from_eight_concurrent_callers_five_rounds() -> None:
    """Each round, eight callers read 48 of the shared pages at once; the rounds overlap, so that over five
    rounds every page is read and some twice, and a page read twice must read the same."""
    import gzip
    import json

    folder = shared_data("article-extraction-benchmark")
    truth = json.loads((folder / "ground-truth.json").read_text(encoding="utf-8"))
    pages = [(key, gzip.decompress((folder / "html" / f"{key}.html.gz").read_bytes()), item.get("url"))
             for key, item in truth.items()]
    pool = ParserPool(IsolationSettings(workers=2, timeout_s=60))
    texts: dict[str, set[str]] = {}
    reads = 0

    async def caller(share: list[tuple[str, bytes, str]]) -> None:
        nonlocal reads
        for key, body, url in share:
            page = await extract_page(body, url)
            texts.setdefault(key, set()).add(page.text)
            reads += 1

    try:
        with using(pool):
            for round_ in range(5):
                chosen = [pages[(round_ * 36 + offset) % len(pages)] for offset in range(48)]
                await asyncio.gather(*(caller(chosen[start::8]) for start in range(8)))
    finally:
        pool.close()
    assert reads == 240 and len(texts) == len(pages), "every shared page was read, none lost"
    assert all(len(found) == 1 for found in texts.values()), "a page read twice reads the same"
    assert sum(1 for found in texts.values() if next(iter(found))) >= len(pages) * 0.95
