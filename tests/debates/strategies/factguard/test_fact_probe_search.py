"""FactProbe as factguard.yaml configures it: Serper first (DuckDuckGo only without it), the top five usable results."""

from __future__ import annotations

import asyncio
import json
from typing import Iterator

import pytest

from debates.config_loader import load_config, with_overrides
from debates.strategies.factguard.config import FactGuardConfig
from m3d_agents.backends.factory import BackendPool
from m3d_agents.sample import Sample
from m3d_agents.tools.analysis.fact_probe import build_report, select
from retrieval.config import RetrievalConfig
from retrieval.guards import FetchGuard
from retrieval.runpath import open_retrieval
from tests.support.page_server import PageServer

ORGANIC = [{"title": f"Report {i}", "link": f"https://news{i}.example.org/flood", "snippet": f"The flood, as report {i} saw it."}
           for i in range(1, 8)]
ORGANIC.insert(1, {"title": "A post", "link": "https://www.facebook.com/someone/posts/1", "snippet": "My video of the flood."})


@pytest.fixture
def server() -> Iterator[PageServer]:
    with PageServer() as running:
        yield running


def factguard_with(server: PageServer, store: str) -> FactGuardConfig:
    config = load_config("factguard")
    assert isinstance(config, FactGuardConfig) and config.retrieval is not None
    settings = config.retrieval.model_copy(update={"endpoints": config.retrieval.endpoints.model_copy(
        update={"serper": f"{server.base}/api/serper"}), "store_path": store})
    return with_overrides(config, retrieval=RetrievalConfig.model_validate(settings.model_dump()))


def test_factguard_turns_fact_probe_on_with_serper_first() -> None:
    config = load_config("factguard")
    assert isinstance(config, FactGuardConfig) and config.retrieval is not None
    assert config.retrieval.web_search == ["serper", "duckduckgo"] and config.retrieval.web_first_available
    assert config.retrieval.query_results >= config.fact_probe_top_k == 5
    assert not config.retrieval.summary.enabled and not config.retrieval.judge_unknown_domains
    assert config.retrieval.reverse_image == [] and not config.retrieval.caption_search


async def test_serper_answers_alone_and_five_usable_results_reach_the_report(server: PageServer, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("SERPER_API_KEY", "serper-key")
    server.api_answers["serper"] = {"organic": ORGANIC}
    config = factguard_with(server, str(tmp_path / "evidence.sqlite"))
    sources = open_retrieval(config.retrieval, BackendPool(), mode="live", backend="policy", guard=FetchGuard(allow_loopback=True))
    try:
        searcher = sources.searchers["web"]
        results = await searcher.answer("flood in town", Sample(text="a flood in town"))
    finally:
        await sources.close()
    assert [json.loads(r["body"]) for r in server.requests] == [{"q": "flood in town", "num": 10}], "Serper once, DuckDuckGo never"
    kept, dropped = select(results, config.fact_probe_top_k)
    assert [e.title for e in kept] == [f"Report {i}" for i in range(1, 6)] and dropped == {"social": 1}
    report = build_report("flood in town", kept)
    assert [line[:3] for line in report.splitlines()[1:]] == ["[1]", "[2]", "[3]", "[4]", "[5]"]


def test_without_a_serper_key_duckduckgo_is_the_provider_and_the_run_says_so(server: PageServer, tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("SERPER_API_KEY", raising=False)
    sources = open_retrieval(factguard_with(server, str(tmp_path / "e.sqlite")).retrieval, BackendPool(), mode="live",
                             backend="policy")
    try:
        assert sources.log.not_run == {"serper": "no key: set SERPER_API_KEY"}
        assert [p.name for p in sources.searchers["web"].providers] == ["duckduckgo"]  # type: ignore[attr-defined]
    finally:
        asyncio.run(sources.close())
