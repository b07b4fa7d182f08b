"""Study sessions are bounded state: at most ``max_study_sessions`` at once, dropped after ``study_idle_s`` without a
request, and a post's verdict let go once it is answered twice; the study's first page says so, and a dropped
session's answers stay in its file."""

from __future__ import annotations

import html
import re
from pathlib import Path

import httpx

from tests.support.runs import scripted_pool_factory, verite_responder
from tests.support.web import csrf_of, running_server, settings_for


def message_of(page: str) -> str:
    found = re.search(r'<p class="message">(.*?)</p>', page, re.S)
    assert found, page[:400]
    return " ".join(html.unescape(found.group(1)).split())


def start(browser: httpx.Client, dataset: str, count: int = 1) -> httpx.Response:
    token = csrf_of(browser.get("/study").text)
    return browser.post("/study", data={"csrf": token, "dataset": dataset, "count": str(count), "first": "1",
                                        "config": "check", "backend": "scripted"})


def test_the_first_page_states_the_limits_and_a_study_past_them_is_refused(tmp_path: Path) -> None:
    factory, _ = scripted_pool_factory(verite_responder)
    settings = settings_for(tmp_path, factory, max_study_sessions=3, study_idle_s=1800.0)
    dataset = next(iter(settings.datasets))
    with running_server(settings) as served, httpx.Client(base_url=served.base, follow_redirects=True) as browser:
        first = " ".join(browser.get("/study").text.split())
        assert "at most 3 study sessions at once" in first and "after 30 minutes without activity" in first
        assert all(start(browser, dataset).status_code == 200 for _ in range(3))
        refused = start(browser, dataset)
        assert refused.status_code == 429
        assert "3 study sessions are open on this server already" in message_of(refused.text)
        assert len(served.app.app.state.studies.sessions) == 3


def test_an_idle_session_is_dropped_and_its_answers_stay_saved(tmp_path: Path) -> None:
    factory, _ = scripted_pool_factory(verite_responder)
    settings = settings_for(tmp_path, factory, max_study_sessions=2, study_idle_s=600.0)
    dataset = next(iter(settings.datasets))
    with running_server(settings) as served, httpx.Client(base_url=served.base, follow_redirects=True) as browser:
        post = start(browser, dataset, count=2)
        answered = browser.post(str(post.url) + "/before", data={"csrf": csrf_of(post.text), "label": "pristine",
                                                                  "confidence": "6"})
        assert answered.status_code == 200
        registry = served.app.app.state.studies
        (session,) = registry.sessions.values()
        session.touched -= 601  # ten minutes and a second without a request
        gone = browser.get(str(post.url))
        assert gone.status_code == 404 and "dropped after 10 minutes without activity" in message_of(gone.text)
        assert registry.sessions == {} and session.verdicts == {}
        assert start(browser, dataset).status_code == 200 and start(browser, dataset).status_code == 200, \
            "the dropped session no longer counts against the limit"
    (saved,) = (tmp_path / "studies").glob("*.jsonl")
    assert '"phase":"before"' in saved.read_text().replace(" ", "")


def test_a_post_answered_twice_lets_its_verdict_go(tmp_path: Path) -> None:
    factory, _ = scripted_pool_factory(verite_responder)
    settings = settings_for(tmp_path, factory)
    dataset = next(iter(settings.datasets))
    with running_server(settings) as served, httpx.Client(base_url=served.base, follow_redirects=True) as browser:
        post = start(browser, dataset, count=2)
        token = csrf_of(post.text)
        reveal = browser.post(str(post.url) + "/before", data={"csrf": token, "label": "pristine", "confidence": "6"})
        (session,) = served.app.app.state.studies.sessions.values()
        assert set(session.verdicts) == {0}
        browser.post(str(reveal.url).replace("/reveal", "/after"), data={"csrf": token, "label": "pristine", "confidence": "7"})
        assert 0 not in session.verdicts, "the answered post's verdict is no longer held"
