"""The web page in a real browser: headless Chromium driven by Playwright, against ``m3d serve``'s application
on a free loopback port with a scripted backend. Each test saves a screenshot under ``test-artifacts/``.

Outside CI these tests skip where /usr/bin/chromium is missing; in CI a missing browser fails them.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest
from playwright.sync_api import expect

from tests.support.paths import EXAMPLE_IMAGE
from tests.support.runs import judged_responder, make_run, scripted_pool_factory, verite_responder
from tests.support.web import chromium, layout_problems, running_server, screenshot, settings_for, static_sources

pytestmark = pytest.mark.browser

POST = "Storm clouds over the Statue of Liberty during Hurricane Sandy"


def wait_until(condition, timeout_s: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def test_a_person_takes_the_judge_seat_reads_the_streamed_turns_decides_and_the_verdict_shows(tmp_path: Path) -> None:
    factory, clients = scripted_pool_factory(judged_responder)
    settings = settings_for(tmp_path, factory, sources_for=lambda sample: static_sources())
    with running_server(settings) as served, chromium() as browser:
        page = browser.new_page()
        page.goto(served.base + "/live")
        page.select_option("#config", "judged")
        page.select_option("#seat", "judge")
        page.fill("#text", POST)
        page.set_input_files("#image", str(EXAMPLE_IMAGE))
        page.click("#start")

        page.wait_for_selector("#seat-panel:not([hidden])")
        assert page.locator("img.post-image").count() == 0 and page.is_visible("#image-withheld")  # as the seat sees it
        turns = page.locator("#turns .turn")
        assert turns.count() == 4  # two rounds of prosecutor and defender, streamed before the judge's turn
        assert [turns.nth(i).get_attribute("data-speaker") for i in range(4)] == ["prosecutor", "defender"] * 2
        assert "light on the statue" in turns.nth(0).inner_text()
        assert "light on the statue" in page.inner_text("#seat-prompt")  # the judge reads the debaters' arguments
        assert "found by retrieval" not in page.inner_text("#seat-prompt")  # a judge is given no evidence, nor told of any
        assert "will answer your argument" not in (page.get_attribute("#argument", "placeholder") or "")  # it speaks last
        assert page.locator("#seat-form input[name=label]").count() == 2  # real / fake, the post's labels

        page.click("#send")  # the judge must answer: no label picked, the browser keeps the form
        assert page.is_visible("#seat-panel")
        page.check("#seat-form input[name=label][value=fake]")
        page.fill("#argument", "The light falls from two directions, so the sky was pasted in.")
        page.locator("#confidence").fill("90")
        screenshot(page, "live-judge-seat-your-turn")
        page.click("#send")

        page.wait_for_selector("#verdict-card")
        assert page.inner_text("#verdict-label") == "fake"
        assert "judge (you)" in page.inner_text("#turns")
        assert "confidence 90%" in page.inner_text("#verdict-card")
        cards = page.locator("#verdict-card .ev")
        assert cards.count() == 2
        assert "reliable" in cards.nth(0).inner_text() and "kept" in cards.nth(0).inner_text()
        assert "filtered out" in cards.nth(1).inner_text() and "satire site" in cards.nth(1).inner_text()
        heatmaps = page.locator("#verdict-card img.heatmap")
        assert heatmaps.count() >= 4  # the fused map and each tool's
        page.wait_for_function(  # every heat map is served and decodes as an image (a function: the CSP forbids eval)
            "() => Array.from(document.querySelectorAll('#verdict-card img')).every(i => i.complete && i.naturalWidth > 0)")
        assert page.inner_text("#model-calls") == "4"  # the person's turn costs no model call
        screenshot(page, "live-judge-seat-verdict")
    assert sum(len(c.calls) for c in clients) == 4


def agent_a_responder(messages, _kwargs):  # type: ignore[no-untyped-def]
    return "AGENT-A-ARGUES the clouds are pasted in.\nFINAL ANSWER: fake\nCONFIDENCE: 1.00"


def test_a_person_in_agent_bs_async_seat_sees_no_other_seats_first_answer_before_their_own(tmp_path: Path) -> None:
    """LLM-Consensus's async first round is independent: neither the streamed turns nor the seat's screen show
    agent_a's round-1 answer until agent_b has given theirs, as for the model that sits there."""
    factory, clients = scripted_pool_factory(agent_a_responder)
    settings = settings_for(tmp_path, factory)
    with running_server(settings) as served, chromium() as browser:
        page = browser.new_page()
        page.goto(served.base + "/live")
        page.select_option("#config", "async")
        page.select_option("#seat", "agent_b")
        page.fill("#text", POST)
        page.click("#start")

        page.wait_for_selector("#seat-panel:not([hidden])")
        wait_until(lambda: len(clients) == 1 and len(clients[0].calls) >= 1)  # agent_a has answered round 1
        assert page.locator("#turns .turn").count() == 0
        assert "AGENT-A-ARGUES" not in page.inner_text("body")
        assert "independent assessment" in page.inner_text("#seat-prompt")
        assert "found by retrieval" not in page.inner_text("#seat-prompt")  # no evidence was gathered for this post
        screenshot(page, "live-async-agent-b-first-turn")
        page.check("#seat-form input[name=label][value=real]")
        page.fill("#argument", "The harbour had storms that week.")
        page.click("#send")

        expect(page.locator("#turns .turn[data-speaker=agent_a]").first).to_contain_text("AGENT-A-ARGUES")
        speakers = page.locator("#turns .turn")
        assert [speakers.nth(i).get_attribute("data-speaker") for i in range(2)] == ["agent_a", "agent_b"]


def test_leaving_the_page_cancels_the_debate(tmp_path: Path) -> None:
    factory, _ = scripted_pool_factory(judged_responder)
    settings = settings_for(tmp_path, factory)
    with running_server(settings) as served, chromium() as browser:
        page = browser.new_page()
        page.goto(served.base + "/live")
        page.select_option("#config", "judged")
        page.select_option("#seat", "judge")
        page.fill("#text", POST)
        page.click("#start")
        page.wait_for_selector("#seat-panel:not([hidden])")
        (debate,) = served.live_debates.debates.values()
        assert debate.phase == "running"
        screenshot(page, "live-before-leaving")
        page.goto(served.base + "/")
        wait_until(lambda: debate.phase == "cancelled" and debate.task is not None and debate.task.done())
        assert debate.task.cancelled() and debate.verdict is None

        page.goto(served.base + f"/live/{debate.id}")  # the page of a cancelled debate says so; nothing restarts
        expect(page.locator("#status")).to_contain_text("cancels it")
        assert debate.phase == "cancelled"


def test_a_reviewer_filters_a_run_overrides_a_label_and_annotations_gain_exactly_that_row(tmp_path: Path) -> None:
    factory, _ = scripted_pool_factory(verite_responder)
    run = asyncio.run(make_run(tmp_path / "runs" / "verite-async"))
    results_before = (run / "results.jsonl").read_bytes()
    settings = settings_for(tmp_path, factory)
    with running_server(settings) as served, chromium() as browser:
        page = browser.new_page()
        page.goto(served.base + "/review")
        page.click("#runs a")
        rows = page.locator("#samples tr[data-sample]")
        expect(rows).to_have_count(3)
        assert page.inner_text("#accuracy") == "0.333"

        page.select_option("#show", "wrong")
        page.click("#apply")
        expect(page.locator("#shown-count")).to_contain_text("1 of 3")
        assert rows.first.get_attribute("data-sample") == "verite-1"
        page.select_option("#show", "abstained")
        page.click("#apply")
        expect(page.locator("#samples tr[data-sample='verite-1']")).to_have_count(0)
        assert [rows.nth(i).get_attribute("data-sample") for i in range(rows.count())] == ["verite-2"]
        page.select_option("#show", "all")
        page.select_option("#gold_label", "falsified")
        page.click("#apply")
        expect(page.locator("#shown-count")).to_contain_text("2 of 3")
        expect(rows).to_have_count(2)
        screenshot(page, "review-run-filtered")

        page.click("#samples tr[data-sample='verite-1'] a")
        expect(page.locator("h1")).to_contain_text("Sample verite-1")
        assert "Greece" in page.inner_text("body")  # the post, from the data set the server was started with
        assert page.locator(".turns .turn").count() == 3
        page.select_option("#override-label", "pristine")
        page.fill("#note", "The 2021 photo agency caption says Greece; the data set's label is wrong.")
        page.fill("#reviewer", "rev-1")
        page.click("#save-override")
        page.wait_for_selector("#saved")
        assert "pristine" in page.inner_text("#history")
        screenshot(page, "review-sample-overridden")

        page.goto(served.base + "/review/run?ref=0/verite-async&against=annotations")
        assert page.inner_text("#accuracy") == "0.667"
        assert page.inner_text("#samples tr[data-sample='verite-1']").split("\t")[6] == "pristine"  # the reviewer's label
        screenshot(page, "review-run-against-annotations")

    lines = (run / "annotations.jsonl").read_text().splitlines()
    assert len(lines) == 1
    row = json.loads(lines[0])
    assert (row["sample_id"], row["label"], row["previous_gold"], row["predicted"], row["reviewer"]) == (
        "verite-1", "pristine", "falsified", "pristine", "rev-1")
    assert row["note"].startswith("The 2021 photo agency caption")
    assert (run / "results.jsonl").read_bytes() == results_before  # the run itself is only read


def test_a_study_session_of_two_posts_records_before_and_after_answers(tmp_path: Path) -> None:
    factory, _ = scripted_pool_factory(verite_responder)
    settings = settings_for(tmp_path, factory)
    with running_server(settings) as served, chromium() as browser:
        page = browser.new_page()
        page.goto(served.base + "/study")
        page.fill("#participant", "p01")
        page.fill("#count", "2")
        page.select_option("#study-config", "async")
        page.click("#begin")

        answers = [(("falsified", 3), ("pristine", 8)), (("falsified", 6), ("falsified", 5))]
        for index, (before, after) in enumerate(answers):
            expect(page.locator("h1")).to_contain_text(f"Post {index + 1} of 2 your first answer")
            assert page.locator("#system").count() == 0  # the first answer is given without the system's
            page.check(f"#answer-form input[name=label][value={before[0]}]")
            page.check(f"#answer-form input[name=confidence][value='{before[1]}']")
            page.click("#submit-answer")
            assert page.inner_text("#system-label") == "pristine"
            assert page.inner_text("#explanation").strip()
            if index == 0:
                screenshot(page, "study-reveal")
            page.check(f"#answer-form input[name=label][value={after[0]}]")
            page.check(f"#answer-form input[name=confidence][value='{after[1]}']")
            page.click("#submit-answer")

        assert page.inner_text("#accuracy-before") == "50%" and page.inner_text("#accuracy-after") == "100%"
        assert page.inner_text("#confidence-before") == "4.5" and page.inner_text("#confidence-after") == "6.5"
        screenshot(page, "study-done")

    (study_file,) = (tmp_path / "studies").glob("study-*.jsonl")
    rows = [json.loads(line) for line in study_file.read_text().splitlines()]
    assert [(r["post"], r["phase"], r["label"], r["confidence"]) for r in rows] == [
        (0, "before", "falsified", 3), (0, "after", "pristine", 8), (1, "before", "falsified", 6), (1, "after", "falsified", 5)]
    assert [r["sample_id"] for r in rows] == ["verite-0", "verite-0", "verite-1", "verite-1"]
    assert [r["correct"] for r in rows] == [False, True, True, True]
    assert [r["system_label"] for r in rows] == [None, "pristine", None, "pristine"]
    assert {r["participant"] for r in rows} == {"p01"}


def test_path_traversal_and_oversized_uploads_are_refused_with_clear_messages(tmp_path: Path) -> None:
    factory, clients = scripted_pool_factory(judged_responder)
    asyncio.run(make_run(tmp_path / "runs" / "verite-async"))
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "run.json").write_text("{}")
    (tmp_path / "runs" / "escape").symlink_to(outside)
    big = tmp_path / "big.jpg"
    big.write_bytes(EXAMPLE_IMAGE.read_bytes() + b"\0" * 300_000)
    huge = tmp_path / "huge.jpg"
    huge.write_bytes(EXAMPLE_IMAGE.read_bytes() + b"\0" * 3_000_000)
    not_an_image = tmp_path / "notes.png"
    not_an_image.write_text("this is text, not a picture")
    settings = settings_for(tmp_path, factory, max_upload_bytes=200_000)
    with running_server(settings) as served, chromium() as browser:
        page = browser.new_page()

        def refused(url: str) -> tuple[int, str]:
            response = page.goto(served.base + url)
            assert response is not None
            return response.status, page.inner_text(".message")

        status, message = refused("/review/run?ref=0/../../etc")
        assert status == 403 and "'..' in a run path would leave the run roots" in message
        status, message = refused("/review/run?ref=0/%2E%2E/%2E%2E/etc")
        assert status == 403 and "leave the run roots" in message
        status, message = refused("/review/run?ref=0/escape")
        assert status == 403 and "symbolic link that leads out of the run roots" in message
        status, message = refused("/review/run?ref=0//etc/passwd")
        assert status == 403 and "never by an absolute path" in message
        status, message = refused("/review/file?ref=0/verite-async&name=../../outside/plot.png")
        assert status == 400 and "is not the name of a file of a run folder" in message

        page.goto(served.base + "/review")
        page.fill("#ref", "0/../../../etc")
        page.click("#open")
        assert "Refused" in page.inner_text(".message")
        screenshot(page, "refused-path-traversal")

        for upload in (big, huge):  # over the limit while read; over it by its Content-Length before any read
            page.goto(served.base + "/live")
            page.fill("#text", POST)
            page.set_input_files("#image", str(upload))
            with page.expect_response(lambda r: r.url.endswith("/live")) as answered:
                page.click("#start")
            assert answered.value.status == 413
            message = page.inner_text("#problem" if upload == big else ".message")
            assert "0.2 MB" in message and "Choose a smaller image" in message
            screenshot(page, f"refused-oversized-upload-{upload.stem}")

        page.goto(served.base + "/live")
        page.fill("#text", POST)
        page.set_input_files("#image", str(not_an_image))
        page.click("#start")
        assert "image notes.png" in page.inner_text("#problem") and "not an image file" in page.inner_text("#problem")
        assert str(settings.upload_dir) not in page.content()
        assert list(settings.upload_dir.iterdir()) == []  # refused uploads are not kept
    assert not settings.upload_dir.exists()  # the upload folder goes with the server
    assert clients == []  # no debate started


def test_every_page_fits_a_1280_and_an_800_px_window_without_a_word_broken_inside(tmp_path: Path) -> None:
    """No horizontal scrolling and no word split across lines (``mo/dal/ity``), checked in the browser on the live
    debate with its verdict, the review list (a saved debate's long data set path among the runs), a run, a sample,
    a saved debate without a gold label (no empty plots: it says why) and the forms; a screenshot of each."""
    factory, _ = scripted_pool_factory(verite_responder)
    asyncio.run(make_run(tmp_path / "runs" / "verite-async"))
    settings = settings_for(tmp_path, factory, sources_for=lambda sample: static_sources())
    with running_server(settings) as served, chromium() as browser:
        page = browser.new_page()
        page.goto(served.base + "/live")
        page.select_option("#config", "async")
        page.fill("#text", POST)
        page.set_input_files("#image", str(EXAMPLE_IMAGE))
        page.click("#start")
        page.wait_for_selector("#saved-run a", timeout=60_000)
        pages = {"live-verdict": None}
        saved = page.get_attribute("#saved-run a", "href")
        assert saved is not None
        pages.update({"review-list": "/review", "review-run": "/review/run?ref=0/verite-async",
                      "review-sample": "/review/sample?ref=0/verite-async&id=verite-1", "review-saved-debate": saved,
                      "live-form": "/live", "study-start": "/study", "home": "/"})
        for name, url in pages.items():
            if url is not None:
                page.goto(served.base + url)
            if name == "review-saved-debate":
                assert page.locator(".plots img").count() == 0 and "no sample of this run has a gold label" in page.inner_text(
                    "#no-plots")
            problems = layout_problems(page, name=f"layout-{name}")
            assert problems == {1280: {"overflow": 0, "broken": []}, 800: {"overflow": 0, "broken": []}}, name
