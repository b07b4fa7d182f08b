"""AgentFact's leakage protocol as its configurations set it (App. C substrings on host and URL, the
claim-date rule, undated pages kept as the paper keeps them; our agentfact-dated drops them and caps
searches at the claim date) and its web search rule (Serper alone when its key is set, DuckDuckGo
only without it)."""

from __future__ import annotations

import json
from datetime import date
from typing import Iterator

import pytest

from debates.config_loader import load_config, with_overrides
from m3d_agents.backends.factory import BackendPool
from m3d_agents.evidence import Evidence
from m3d_agents.sample import Sample, SampleMetadata
from retrieval.config import LeakageSettings, RetrievalConfig
from retrieval.guards import FetchGuard
from retrieval.leakage import Candidate, LeakageFilter, rule_of
from retrieval.pipeline import EvidencePipeline
from retrieval.runpath import open_retrieval
from tests.support.paths import shared_data
from tests.support.provider_server import KEY, ProviderServer

APPENDIX_C = ["snopes", "politifact", "factcheck", "truthorfiction", "hoax-slayer", "eadstories", "opensecrets", "fullfact",
              "checkyourfact", "realitycheck", "fact-check"]
"""The App. C list as the paper prints it (paper lines 509-519)."""
CLAIM_DATE = date(2023, 5, 31)


def agentfact_settings(name: str = "agentfact") -> RetrievalConfig:
    config = load_config(name)
    assert config.retrieval is not None
    return config.retrieval


def candidate(url: str, published: date | None = date(2023, 5, 2)) -> Candidate:
    from retrieval.domains import host_of

    return Candidate(evidence=Evidence(kind="web_page", url=url, domain=host_of(url), published=published, text=f"text of {url}"))


def test_agentfact_configurations_carry_the_paper_rule_and_our_variant_the_stricter_one() -> None:
    """Paper line 294: only evidence published after the fact-check date goes; undated pages stay."""
    for name in ("agentfact", "agentfact-code", "agentfact-no-sp", "agentfact-no-ir", "agentfact-no-tr", "agentfact-no-rt",
                 "agentfact-dated"):
        config = load_config(name)
        assert config.retrieval is not None, name
        leakage = config.retrieval.leakage
        assert leakage.url_substrings == APPENDIX_C and leakage.drop_after_claim_date, name
        stricter = name == "agentfact-dated"
        assert (leakage.drop_undated, leakage.search_date_cap) == (stricter, stricter), name
        assert {"undated-dropped", "search-date-cap"} <= {d.id for d in config.departures} or not stricter, name
        assert config.retrieval.web_first_available and config.retrieval.web_search == ["serper", "duckduckgo"], name
    assert LeakageSettings().url_substrings == [] and not LeakageSettings().drop_undated, "other configurations keep theirs"


@pytest.mark.parametrize("substring", APPENDIX_C)
def test_each_appendix_c_substring_drops_a_page_by_its_host_and_by_its_url(substring: str) -> None:
    """Hosts no list names (so only the substring rule can catch them), and a news page whose path has the substring."""
    host = f"https://www.my{substring}news.example/2023/05/story"
    path = f"https://news.example/2023/05/{substring}-story"
    out, report = LeakageFilter(settings=agentfact_settings().leakage).apply([candidate(host), candidate(path)], CLAIM_DATE)
    assert [e.kept for e in out] == [False, False]
    assert [rule_of(e) for e in out] == ["factcheck_substring", "factcheck_substring"]
    assert repr(substring) in out[0].reason
    assert report.dropped["factcheck_substring"] == 2


def test_hosts_the_domain_list_misses_are_caught_by_the_substring_rule_only() -> None:
    pages = [candidate("https://factcheckni.org/articles/x"), candidate("https://www.opensecrets.org/news/2023/05/x"),
             candidate("https://bbc.co.uk/news/realitycheck-123")]
    without, _ = LeakageFilter().apply(list(pages), CLAIM_DATE)
    assert [e.kept for e in without] == [True, True, False], "the project's own rules alone miss two of them"
    with_rule, _ = LeakageFilter(settings=agentfact_settings().leakage).apply(list(pages), CLAIM_DATE)
    assert [e.kept for e in with_rule] == [False, False, False]


def test_the_paper_keeps_an_undated_page_and_our_variant_drops_it() -> None:
    pages = [candidate("https://news.example/undated", published=None), candidate("https://news.example/before"),
             candidate("https://news.example/after", published=date(2023, 6, 1))]
    paper, _ = LeakageFilter(settings=agentfact_settings().leakage).apply(list(pages), CLAIM_DATE)
    assert [(e.kept, rule_of(e)) for e in paper] == [(True, None), (True, None), (False, "after_claim_date")]
    out, report = LeakageFilter(settings=agentfact_settings("agentfact-dated").leakage).apply(pages, CLAIM_DATE)
    assert [(e.kept, rule_of(e)) for e in out] == [(False, "undated"), (True, None), (False, "after_claim_date")]
    assert report.dropped["undated"] == 1
    strict = agentfact_settings("agentfact-dated").leakage
    kept, _ = LeakageFilter(settings=strict).apply([candidate("https://news.example/u", None)], None)
    assert kept[0].kept, "without a claim date no date rule applies"
    default, _ = LeakageFilter().apply([candidate("https://news.example/undated", published=None)], CLAIM_DATE)
    assert default[0].kept, "the option is off unless a configuration turns it on"


@pytest.fixture
def providers(monkeypatch: pytest.MonkeyPatch) -> Iterator[ProviderServer]:
    shared_data("article-extraction-benchmark")
    shared_data("mr2-sample")
    with ProviderServer() as server:
        for variable, value in server.endpoints().items():
            monkeypatch.setenv(variable, value)
        yield server


def duckduckgo_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    asked: list[str] = []

    def search(self: object, query: str, limit: int) -> list[object]:
        asked.append(query)
        return []

    monkeypatch.setattr("retrieval.providers.duckduckgo.DuckDuckGoSearch._search", search)
    return asked


def agentfact_without_models(name: str = "agentfact") -> object:
    """``name`` with its retrieval block, minus the model calls retrieval makes (summaries, domain judgements)."""
    settings = agentfact_settings(name)
    quiet = settings.model_copy(update={"judge_unknown_domains": False,
                                        "summary": settings.summary.model_copy(update={"enabled": False})})
    return with_overrides(load_config(name), retrieval=quiet)


SAMPLE = Sample(id="s1", text="Claim: A ferry sank in the harbour.\nPost: It sank this morning!",
                metadata=SampleMetadata(claim_date=CLAIM_DATE))


@pytest.mark.parametrize(("name", "capped"), [("agentfact", False), ("agentfact-dated", True)])
async def test_with_a_serper_key_duckduckgo_is_never_asked_and_only_our_variant_caps_the_search_date(
    providers: ProviderServer, monkeypatch: pytest.MonkeyPatch, tmp_path: object, name: str, capped: bool
) -> None:
    monkeypatch.setenv("SERPER_API_KEY", KEY)
    asked = duckduckgo_calls(monkeypatch)
    sources = open_retrieval(agentfact_without_models(name).retrieval, BackendPool(), backend="local", mode="live",  # type: ignore[attr-defined]
                             store_path=tmp_path / "e.sqlite", guard=FetchGuard(allow_loopback=True))  # type: ignore[operator]
    try:
        web = sources.searchers["web"]
        assert isinstance(web, EvidencePipeline)
        await web.answer_result("ferry sinking harbour", SAMPLE)
        await web.answer_result("harbour ferry timetable", SAMPLE)
    finally:
        await sources.close()
    assert asked == [], "DuckDuckGo is never asked while Serper answers"
    serper = [json.loads(r["body"]) for r in providers.requests if r["path"] == "/serper/search"]
    assert [r["q"] for r in serper] == ["ferry sinking harbour", "harbour ferry timetable"]
    if capped:
        assert all(r["tbs"] == "cdr:1,cd_max:5/31/2023" for r in serper), "pages up to the claim date only"
    else:
        assert not any("tbs" in r for r in serper), "the paper filters what comes back, not the search"


async def test_without_a_serper_key_only_duckduckgo_is_asked(providers: ProviderServer, monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: object) -> None:
    asked = duckduckgo_calls(monkeypatch)
    sources = open_retrieval(agentfact_without_models().retrieval, BackendPool(), backend="local", mode="live",  # type: ignore[attr-defined]
                             store_path=tmp_path / "e.sqlite", guard=FetchGuard(allow_loopback=True))  # type: ignore[operator]
    try:
        assert sources.log.not_run == {"google_vision": "no key: set GOOGLE_VISION_API_KEY", "serper": "no key: set SERPER_API_KEY"}
        web = sources.searchers["web"]
        assert isinstance(web, EvidencePipeline) and [p.name for p in web.web] == ["duckduckgo"]
        await web.answer_result("ferry sinking harbour", SAMPLE)
    finally:
        await sources.close()
    assert asked == ["ferry sinking harbour"]
    assert not any(r["path"] == "/serper/search" for r in providers.requests)


async def test_without_first_available_every_provider_is_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    from retrieval.providers.base import SearchHit

    class Fixed:
        def __init__(self, name: str) -> None:
            self.name = name
            self.asked = 0

        async def search(self, query: str, limit: int = 10) -> list[SearchHit]:
            self.asked += 1
            return [SearchHit(url=f"https://{self.name}.example/1", snippet="a page", provider=self.name)]

    first, second = Fixed("one"), Fixed("two")
    await EvidencePipeline(web=[first, second], config=RetrievalConfig()).answer("q", SAMPLE)
    assert (first.asked, second.asked) == (1, 1)
    await EvidencePipeline(web=[first, second], config=RetrievalConfig(web_first_available=True)).answer("q", SAMPLE)
    assert (first.asked, second.asked) == (2, 1), "the first provider that finds results answers alone"
