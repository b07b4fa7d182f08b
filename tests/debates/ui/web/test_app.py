"""The web application over HTTP, without a browser: the token, forged forms and sockets, clear error pages,
and no secret in a page or a log line."""

from __future__ import annotations

import asyncio
import html
import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest
import websockets

from debates.ui.web import review
from debates.ui.web.study import StudyAnswer, summarise_study
from m3d_agents.errors import BackendError
from tests.support.runs import make_run, scripted_pool_factory, verite_responder
from tests.support.web import csrf_of, live_debate, running_server, settings_for

TOKEN = "a-long-server-token-0123456789"
SECRET = "sk-test-SECRET123456789"


def message_of(page: str) -> str:
    found = re.search(r'<p class="message">(.*?)</p>', page, re.S)
    assert found, page[:400]
    return html.unescape(found.group(1))


def test_with_a_token_every_request_needs_it_and_the_token_leaves_the_address_bar(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    factory, _ = scripted_pool_factory(verite_responder)
    with running_server(settings_for(tmp_path, factory, token=TOKEN)) as served:
        plain = httpx.get(served.base + "/review")
        assert plain.status_code == 401 and "needs its access token" in message_of(plain.text)
        assert httpx.get(served.base + "/review", params={"token": "wrong-token-wrong-token"}).status_code == 401

        swapped = httpx.get(served.base + "/review", params={"token": TOKEN, "show": "all"})
        assert swapped.status_code == 303 and swapped.headers["location"] == "/review?show=all"
        cookie = swapped.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        with httpx.Client(base_url=served.base, cookies=swapped.cookies) as browser:
            page = browser.get("/review")
            assert page.status_code == 200 and TOKEN not in page.text
        assert httpx.get(served.base + "/", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200
    logged = capfd.readouterr().err
    assert "GET /review refused 401" in logged and "GET /review 200" in logged and TOKEN not in logged


def test_a_page_asked_for_by_another_host_name_is_refused(tmp_path: Path) -> None:
    """DNS rebinding: a site whose name now resolves to 127.0.0.1 still sends its own name as Host."""
    factory, _ = scripted_pool_factory(verite_responder)
    with running_server(settings_for(tmp_path, factory)) as served:
        refused = httpx.get(served.base + "/review", headers={"host": "attacker.example"})
        assert refused.status_code == 400 and "answers only to loopback addresses" in message_of(refused.text)
        assert httpx.get(served.base + "/review", headers={"host": "localhost:1234"}).status_code == 200


def test_forged_forms_are_refused_and_write_nothing(tmp_path: Path) -> None:
    factory, _ = scripted_pool_factory(verite_responder)
    run = asyncio.run(make_run(tmp_path / "runs" / "r"))
    with running_server(settings_for(tmp_path, factory)) as served, httpx.Client(base_url=served.base) as browser:
        page = browser.get("/review/sample", params={"ref": "0/r", "id": "verite-1"})
        token = csrf_of(page.text)
        form = {"ref": "0/r", "sample_id": "verite-1", "label": "pristine", "note": "n"}

        no_token = browser.post("/review/annotate", data=form)
        assert no_token.status_code == 403 and "did not come from this server's own page" in message_of(no_token.text)
        other_browser = httpx.post(served.base + "/review/annotate", data={**form, "csrf": token})  # no cookie of ours
        assert other_browser.status_code == 403
        other_site = browser.post("/review/annotate", data={**form, "csrf": token}, headers={"origin": "http://evil.example"})
        assert other_site.status_code == 403 and "sent from another site" in message_of(other_site.text)
        assert not (run / "annotations.jsonl").exists()

        saved = browser.post("/review/annotate", data={**form, "csrf": token})
        assert saved.status_code == 303
        assert len((run / "annotations.jsonl").read_text().splitlines()) == 1

        bad_label = browser.post("/review/annotate", data={**form, "label": "fake", "csrf": token})
        assert bad_label.status_code == 400 and "is not a label of the ooc taxonomy" in bad_label.text
        assert len((run / "annotations.jsonl").read_text().splitlines()) == 1


def test_the_live_socket_refuses_other_sites_and_stale_form_tokens(tmp_path: Path) -> None:
    factory, clients = scripted_pool_factory(verite_responder)
    with running_server(settings_for(tmp_path, factory)) as served, httpx.Client(base_url=served.base) as browser:
        token = csrf_of(browser.get("/live").text)
        started = browser.post("/live", data={"csrf": token, "config": "async", "backend": "scripted", "text": "A post"},
                               files={"image": ("", b"")})
        assert started.status_code == 303
        debate_id = started.headers["location"].rsplit("/", 1)[1]
        address = served.base.replace("http", "ws") + f"/live/{debate_id}/ws"
        cookie = "; ".join(f"{k}={v}" for k, v in browser.cookies.items())

        async def attempt(origin: str | None, query: str) -> str:
            headers = {"cookie": cookie}
            async with websockets.connect(address + query, origin=origin, additional_headers=headers) as socket:  # type: ignore[arg-type]
                return str(await asyncio.wait_for(socket.recv(), 5))

        for origin in (None, "http://evil.example"):
            with pytest.raises(websockets.exceptions.WebSocketException):
                asyncio.run(attempt(origin, f"?csrf={token}"))
        stale = json.loads(asyncio.run(attempt(served.base, "?csrf=0000")))
        assert stale["type"] == "failed" and "stale" in stale["text"]
        assert served.live_debates.debates[debate_id].phase == "waiting" and clients == []


def test_errors_are_clear_pages_without_tracebacks_or_secrets(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    factory, _ = scripted_pool_factory(verite_responder)
    (tmp_path / "runs" / "broken").mkdir(parents=True)
    (tmp_path / "runs" / "broken" / "run.json").write_text("{not json")

    def explode(*_args: object, **_kwargs: object) -> list[object]:
        raise RuntimeError(f"the listing failed with Authorization: Bearer {SECRET}")

    with running_server(settings_for(tmp_path, factory)) as served:
        pages = {url: httpx.get(served.base + url) for url in (
            "/nowhere", "/review/run?ref=0/broken", "/study/abc/post/first", "/review/run?ref=0/broken&show=everything")}
        monkeypatch.setattr(review, "find_runs", explode)
        pages["/review"] = httpx.get(served.base + "/review")
    expected = {
        "/nowhere": (404, "There is no such page here."),
        "/review/run?ref=0/broken": (400, "The run folder cannot be read"),
        "/study/abc/post/first": (400, "index: Input should be a valid integer"),
        "/review": (500, "Something went wrong on the server; the error was logged."),
    }
    for url, (status, words) in expected.items():
        assert pages[url].status_code == status and words in message_of(pages[url].text), url
    for response in pages.values():
        assert "Traceback" not in response.text and SECRET not in response.text
    logged = capfd.readouterr().err
    assert "RuntimeError" in logged and "Authorization: ***" in logged
    assert SECRET not in logged and "Traceback" not in logged


def test_a_failed_system_verdict_in_a_study_is_shown_and_saved_without_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)

    def failing(*_args: object) -> str:
        raise BackendError(f"the endpoint answered 401: invalid key {SECRET}")

    factory, _ = scripted_pool_factory(failing)
    with running_server(settings_for(tmp_path, factory)) as served, httpx.Client(base_url=served.base,
                                                                                 follow_redirects=True) as browser:
        token = csrf_of(browser.get("/study").text)
        first = browser.post("/study", data={"csrf": token, "dataset": next(iter(settings_for(tmp_path, factory).datasets)),
                                             "count": "1", "first": "1", "config": "check", "backend": "scripted"})
        assert "Post 1 of 1" in first.text
        reveal = browser.post(str(first.url) + "/before",
                              data={"csrf": token, "label": "pristine", "confidence": "7"})
        assert "The system could not answer" in reveal.text and "***" in reveal.text and SECRET not in reveal.text
        done = browser.post(str(reveal.url).replace("/reveal", "/after"), data={"csrf": token, "label": "falsified", "confidence": "2"})
        assert "Thank you" in done.text
    (study,) = (tmp_path / "studies").glob("*.jsonl")
    text = study.read_text()
    assert SECRET not in text
    rows = [StudyAnswer.model_validate_json(line) for line in text.splitlines()]
    assert rows[1].system_label is None and rows[1].system_error and "***" in rows[1].system_error


def test_the_study_summary_compares_before_and_after() -> None:
    def row(post: int, phase: str, label: str, confidence: int, gold: str, system: str | None = None) -> StudyAnswer:
        return StudyAnswer(study="s", participant="", post=post, sample_id=str(post), phase=phase, label=label,  # type: ignore[arg-type]
                           confidence=confidence, gold=gold, correct=label == gold, system_label=system, config="c",
                           backend="b", answered_at="t")

    summary = summarise_study([
        row(0, "before", "fake", 2, "real"), row(0, "after", "real", 9, "real", "real"),
        row(1, "before", "fake", 6, "fake"), row(1, "after", "fake", 7, "fake", "real"),
    ])
    assert (summary.accuracy_before, summary.accuracy_after) == (0.5, 1.0)
    assert (summary.confidence_before, summary.confidence_after) == (4.0, 8.0)
    assert (summary.changed, summary.agreed_with_system_before, summary.agreed_with_system_after) == (1, 0, 1)


def test_a_failed_live_debate_says_so_on_its_page_without_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)

    def failing(*_args: object) -> str:
        raise BackendError(f"the endpoint answered 401 to Authorization: Bearer {SECRET}")

    factory, _ = scripted_pool_factory(failing)
    with running_server(settings_for(tmp_path, factory)) as served, httpx.Client(base_url=served.base) as browser:
        debate_id, seen = live_debate(served, browser, {"config": "check", "backend": "scripted", "text": "A post"})
    assert seen[0] == {"type": "status", "text": "The debate has started."}
    assert seen[-1]["type"] == "failed" and "401" in seen[-1]["text"] and "Authorization: ***" in seen[-1]["text"]
    assert SECRET not in json.dumps(seen)
    assert served.live_debates.debates[debate_id].phase == "failed"

def test_a_post_on_the_live_page_gathers_evidence_through_the_runs_retrieval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The page runs a configuration's retrieval block like ``m3d check`` does: the uploaded image goes to reverse
    image search, the pages found reach the debaters, and the verdict card shows the cards and the report."""
    from retrieval import guards
    from tests.support.debate import answer
    from tests.support.paths import EXAMPLE_IMAGE, shared_data
    from tests.support.provider_server import ProviderServer
    from tests.support.scripted import text_of

    shared_data("article-extraction-benchmark")
    prompts: list[str] = []

    def respond(messages: Any, _kwargs: Any) -> str:
        prompts.append(text_of(messages))
        return answer("real", confidence=0.7)

    factory, _ = scripted_pool_factory(respond)
    settings = settings_for(tmp_path, factory, retrieval="record", evidence_store=tmp_path / "evidence.sqlite")
    with ProviderServer() as providers:
        for key, value in providers.environment().items():
            monkeypatch.setenv(key, value)
        guards.allow_loopback_in_tests(True)
        try:
            with running_server(settings) as served, httpx.Client(base_url=served.base) as browser:
                with EXAMPLE_IMAGE.open("rb") as image:
                    _, seen = live_debate(served, browser, {"config": "async", "backend": "scripted", "text": "Storm over the statue"},
                                       files={"image": (EXAMPLE_IMAGE.name, image.read(), "image/jpeg")})
        finally:
            guards.allow_loopback_in_tests(False)
        reverse_searches = sum(1 for request in providers.requests if request["path"].startswith("/vision/"))
    assert seen[-1]["type"] == "verdict", seen[-1]
    card = seen[-1]["html"]
    assert reverse_searches == 1
    report = html.unescape(re.search(r'id="evidence-report">(.*?)</p>', card, re.S).group(1))  # type: ignore[union-attr]
    assert report.startswith("evidence (record): ") and "google_vision" in report
    assert card.count('class="card ev kept"') >= 1
    kept = re.findall(r'class="card ev kept".*?(ev-[0-9a-f]+)', card, re.S)
    debaters = [p for p in prompts if "Quoted evidence" in p]
    assert debaters and all(f"[{kept[0]}]" in p for p in debaters), "the debaters read the evidence the page shows"
