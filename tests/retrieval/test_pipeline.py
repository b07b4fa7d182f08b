"""The evidence pipeline end to end: offline replay of the MR2 trace, record/replay, summaries, live-style fetching."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import pytest

from m3d_agents.backends.metering import UsageLedger
from m3d_agents.errors import InputError
from m3d_agents.evidence import Evidence
from m3d_agents.sample import Sample, SampleMetadata
from retrieval.config import RetrievalConfig, SummarySettings
from retrieval.fetch import Fetcher
from retrieval.guards import FetchGuard
from retrieval.interfaces import EvidenceSource, QueryAnswerer
from retrieval.pipeline import EvidencePipeline, GatherResult, mr2_replay_pipeline
from retrieval.providers.base import ImageQuery, ReverseImageResult, SearchHit
from retrieval.providers.mr2_trace import MR2Trace
from retrieval.store import EvidenceStore, StoreMiss
from retrieval.summarise import Summariser
from tests.support.paths import EXAMPLE_IMAGE, shared_data
from tests.support.page_server import PageServer
from tests.support.scripted import ScriptedClient, scripted_backend, text_of

MR2_IDS = ["430", "4752708370698760", "4775631591839692", "4806303862493315", "1159"]


@pytest.fixture(scope="module")
def mr2_root() -> Path:
    return shared_data("mr2-sample")


@pytest.fixture(scope="module")
def replayed(mr2_root: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every MR2 sample gathered once, recording into a store, for the tests below to inspect."""
    store_path = tmp_path_factory.mktemp("store") / "evidence.sqlite"

    async def run() -> dict[str, GatherResult]:
        store = EvidenceStore(store_path, "record")
        pipeline = mr2_replay_pipeline(mr2_root, store=store)
        trace = MR2Trace(mr2_root)
        results = {sample_id: await pipeline.collect(trace.sample(sample_id)) for sample_id in trace.ids()}
        store.close()
        return results

    return {"results": asyncio.run(run()), "store": store_path}


def test_every_mr2_sample_gets_evidence_offline(replayed: dict[str, Any]) -> None:
    results: dict[str, GatherResult] = replayed["results"]
    assert sorted(results) == sorted(MR2_IDS)
    for sample_id, result in results.items():
        pages = [e for e in result.kept if e.url]
        assert pages, f"no page evidence for {sample_id}"
        assert all(e.text.strip() for e in result.evidence)
        assert all(e.domain for e in pages)
    quarantine = results["1159"]
    context = quarantine.evidence[0]
    assert context.kind == "reverse_image" and "coronavirus quarantine box" in context.text
    by_domain = {e.domain: e for e in quarantine.evidence if e.url}
    assert by_domain["dailymail.co.uk"].reliability == "unreliable"
    assert by_domain["thetimes.co.uk"].reliability == "reliable"
    assert all(e.language == "en" for e in quarantine.kept if e.url)
    duplicates = [e for e in quarantine.evidence if not e.kept]
    assert duplicates and all(e.reason.startswith("same text as ev-") for e in duplicates)
    chinese = [e for e in results["430"].kept if e.url]
    assert any(e.language == "zh" and "not translated" in e.reason for e in chinese)


def test_pages_missing_from_the_trace_use_the_search_snippet_or_are_reported(replayed: dict[str, Any]) -> None:
    result: GatherResult = replayed["results"]["4775631591839692"]
    assert any("offline replay" in failure for failure in result.failures)
    assert all("snippet only" in e.reason or e.text for e in result.kept)


async def test_replay_only_store_reproduces_the_same_evidence(replayed: dict[str, Any], mr2_root: Path) -> None:
    store = EvidenceStore(replayed["store"], "replay")
    pipeline = mr2_replay_pipeline(mr2_root, store=store)
    sample = MR2Trace(mr2_root).sample("1159")
    again = await pipeline.gather(sample)
    assert [e.model_dump() for e in again] == [e.model_dump() for e in replayed["results"]["1159"].evidence]
    assert store.reused >= 2 and store.recorded == 0
    other = sample.model_copy(update={"text": "a caption that was never searched"})
    with pytest.raises(StoreMiss, match="mr2-direct"):
        await pipeline.gather(other)


def test_the_pipeline_and_answerers_satisfy_the_interfaces(mr2_root: Path) -> None:
    from retrieval.answerer import GatheredEvidenceAnswerer, SearchAnswerer

    pipeline = mr2_replay_pipeline(mr2_root)
    assert isinstance(pipeline, EvidenceSource)
    assert isinstance(GatheredEvidenceAnswerer(pipeline), QueryAnswerer)
    assert isinstance(SearchAnswerer([]), QueryAnswerer)


def summary_responder(messages: Sequence[Any], _kwargs: Mapping[str, Any]) -> str:
    prompt = text_of(messages)
    page_id = prompt.split("Page ", 1)[1].split(",", 1)[0]
    return json.dumps({"summary": f"Summary of {page_id}: a man in a quarantine box at an airport.", "relevant": True})


async def test_summaries_are_attached_fenced_and_translated(mr2_root: Path) -> None:
    client = ScriptedClient(summary_responder)
    config = RetrievalConfig(max_pages=3)
    pipeline = mr2_replay_pipeline(mr2_root, scripted_backend(client), config=config)
    pipeline.rater.judge = None
    trace = MR2Trace(mr2_root)
    ledger = UsageLedger()
    evidence = await pipeline.gather(trace.sample("430"), ledger)
    pages = [e for e in evidence if e.url and e.kept]
    assert pages and all(e.summary == f"Summary of {e.id}: a man in a quarantine box at an airport." for e in pages)
    assert all("translated to English" in e.reason for e in pages if e.language == "zh")
    prompt = client.calls[0].prompt
    assert "<<<QUOTED " in prompt and "untrusted" in prompt
    assert trace.sample("430").text in prompt
    assert "translate what you report into English" in prompt
    assert "best guess for the image" in prompt
    assert ledger.calls(role="summary") == len(pages)


async def test_non_english_pages_can_be_excluded(mr2_root: Path) -> None:
    config = RetrievalConfig(summary=SummarySettings(non_english="exclude"))
    pipeline = mr2_replay_pipeline(mr2_root, scripted_backend(ScriptedClient(summary_responder)), config=config)
    pipeline.rater.judge = None
    evidence = await pipeline.gather(MR2Trace(mr2_root).sample("430"))
    chinese = [e for e in evidence if e.language == "zh"]
    assert chinese and all(not e.kept and "excluded by config" in e.reason for e in chinese)


async def test_an_overlong_summary_is_retried_then_left_out_with_its_reason() -> None:
    long_answer = json.dumps({"summary": "x" * 500, "relevant": True})
    client = ScriptedClient([long_answer, long_answer, long_answer])
    summariser = Summariser(scripted_backend(client), SummarySettings(max_chars=200))
    page = Evidence(kind="web_page", url="https://example.org/a", domain="example.org", text="Storm hits the coast.", language="en")
    ledger = UsageLedger()
    out = await summariser.summarise(page, "A storm photo", "", ledger)
    assert out.summary is None and out.id == page.id
    assert "no summary" in out.reason and "200" in out.reason
    assert len(client.calls) == 3 and ledger.parse_retries == 2


class LoopbackReverseSearch:
    """Stands in for a reverse image search provider, pointing at pages on the test server."""

    name = "loopback-reverse"

    def __init__(self, urls: list[str]) -> None:
        self.urls = urls

    async def search_image(self, query: ImageQuery) -> ReverseImageResult:
        return ReverseImageResult(
            provider=self.name,
            pages=[SearchHit(url=u, provider=self.name, rank=i, match="full") for i, u in enumerate(self.urls)],
            best_guess=["storm over a city"],
        )


async def test_live_path_fetches_scrapes_filters_and_summarises(tmp_path: Path) -> None:
    shared_data("article-extraction-benchmark")
    wsj = "042bb7b5fedab6eac7db576522b89b93904c237d344bcbe14a6a5ab7f7335856"
    review = (
        '<html><head><title>Did the storm photo show NYC?</title><script type="application/ld+json">'
        '{"@type": "ClaimReview", "claimReviewed": "storm photo"}</script></head><body>'
        + "<p>We looked at the photo of the storm over the city and found it was edited.</p>" * 5
        + "</body></html>"
    )
    with PageServer() as server:
        server.pages["review"] = review
        urls = [f"{server.base}/bench/{wsj}", f"{server.base}/page/review", f"{server.base}/image"]
        client = ScriptedClient(lambda m, k: json.dumps({"summary": "The page discusses game streaming.", "relevant": False}))
        store = EvidenceStore(tmp_path / "ev.sqlite")
        pipeline = EvidencePipeline(
            reverse=[LoopbackReverseSearch(urls)],
            fetcher=Fetcher(guard=FetchGuard(allow_loopback=True)),
            store=store,
            summariser=Summariser(scripted_backend(client)),
        )
        sample = Sample(text="Storm over the city #sandy", images=[EXAMPLE_IMAGE], metadata=SampleMetadata(claim_date="2012-10-30"))
        result = await pipeline.collect(sample)
        await pipeline.close()
    by_url = {e.url: e for e in result.evidence if e.url}
    game = by_url[urls[0]]
    assert not game.kept and "after the claim date 2012-10-30" in game.reason
    assert not by_url[urls[1]].kept and "ClaimReview" in by_url[urls[1]].reason
    assert urls[2] not in by_url and any("image/png" in f for f in result.failures)
    assert result.leakage.dropped == {"factcheck_substring": 0, "factcheck_domain": 0, "factcheck_path": 0, "claim_review": 1,
                                      "after_claim_date": 1, "undated": 0}
    assert client.calls == []
    assert game.retrieved_at is not None and game.domain == "127.0.0.1"


async def test_unknown_sample_id_and_bad_trace_are_named(mr2_root: Path, tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not in the MR2 trace"):
        MR2Trace(mr2_root).sample("nope")
    with pytest.raises(InputError, match="dataset_items_test.json does not exist"):
        MR2Trace(tmp_path)
    pipeline = mr2_replay_pipeline(mr2_root)
    result = await pipeline.collect(Sample(text="not in the trace", images=[EXAMPLE_IMAGE]))
    assert result.evidence == [] and len(result.failures) == 2
    assert any("is not in the MR2 trace" in f for f in result.failures)


async def test_summaries_can_be_written_without_the_caption(mr2_root: Path) -> None:
    client = ScriptedClient(summary_responder)
    config = RetrievalConfig(max_pages=2, summary=SummarySettings(condition_on_caption=False))
    pipeline = mr2_replay_pipeline(mr2_root, scripted_backend(client), config=config)
    pipeline.rater.judge = None
    sample = MR2Trace(mr2_root).sample("1159")
    evidence = await pipeline.gather(sample)
    assert any(e.summary for e in evidence)
    assert client.calls and all(sample.text not in call.prompt for call in client.calls)
    assert all("deliberately not shown" in call.prompt for call in client.calls)


class FixedReverse:
    def __init__(self, name: str, urls: list[str]) -> None:
        self.name = name
        self.urls = urls
        self.asked = 0

    async def search_image(self, query: ImageQuery) -> ReverseImageResult:
        self.asked += 1
        return ReverseImageResult(provider=self.name, pages=[SearchHit(url=u, provider=self.name, snippet=f"snippet {u}")
                                                            for u in self.urls])


@pytest.mark.parametrize(("first_urls", "second_asked"), [(["https://a.example/1"], 0), ([], 1)])
async def test_first_available_asks_the_next_reverse_provider_only_when_one_found_nothing(
    first_urls: list[str], second_asked: int
) -> None:
    first, second = FixedReverse("first", first_urls), FixedReverse("second", ["https://b.example/1"])
    pipeline = EvidencePipeline(reverse=[first, second], config=RetrievalConfig(first_available=True, caption_search=False))
    pipeline.rater.judge = None
    await pipeline.gather(Sample(text="a post", images=[EXAMPLE_IMAGE]))
    assert (first.asked, second.asked) == (1, second_asked)


@pytest.mark.parametrize("recognised", ["evidence", "summaries"])
async def test_what_the_reverse_search_recognised_is_an_item_only_where_the_configuration_says(recognised: str) -> None:
    """LLM-Consensus gives its agents the pages' summaries alone; a best guess with no page showing
    the image must not reach them as an item of its own (paper line 43)."""
    class Guessing:
        name = "guessing"

        async def search_image(self, query: ImageQuery) -> ReverseImageResult:
            return ReverseImageResult(provider=self.name, pages=[], best_guess=["storm over a city"], entities=["Sandy"])

    pipeline = EvidencePipeline(reverse=[Guessing()], config=RetrievalConfig(caption_search=False, recognised=recognised))
    pipeline.rater.judge = None
    result = await pipeline.collect(Sample(text="a post", images=[EXAMPLE_IMAGE]))
    [item] = [e for e in result.evidence if e.kind == "reverse_image"]
    assert "storm over a city" in item.text and "storm over a city" in result.image_context
    assert item.kept is (recognised == "evidence")
    assert result.kept == ([item] if recognised == "evidence" else [])
    if recognised == "summaries":
        assert "context for the page summaries only" in item.reason


def test_llm_consensus_configurations_keep_the_recognised_context_out_of_the_prompts() -> None:
    from debates.config_loader import load_config

    for name in ("async", "async-ai", "sync", "judged", "actor-skeptic", "disambiguation", "disambiguation-sync"):
        settings = load_config(name).retrieval
        assert settings is not None and settings.recognised == "summaries", name


class FixedArticles:
    name = "wikipedia"

    def __init__(self) -> None:
        self.queries: list[str] = []

    async def search(self, query: str, limit: int = 5) -> list[SearchHit]:
        self.queries.append(query)
        return [SearchHit(url="https://en.wikipedia.org/wiki/Hurricane_Sandy", title="Hurricane Sandy",
                          snippet="Hurricane Sandy was a tropical cyclone that struck New York in October 2012.",
                          provider="wikipedia", match="page")]


async def test_wikipedia_articles_for_the_post_text_become_evidence_without_a_summary() -> None:
    articles = FixedArticles()
    client = ScriptedClient(summary_responder)
    pipeline = EvidencePipeline(
        text_search=[articles], summariser=Summariser(scripted_backend(client)),
        config=RetrievalConfig(reverse_image=[], caption_search=False, wikipedia=True),
    )
    evidence = await pipeline.gather(Sample(text="RT @news: Storm clouds over the Statue of Liberty during #HurricaneSandy http://t.co/x"))
    assert [(e.kind, e.title, e.kept) for e in evidence] == [("wikipedia", "Hurricane Sandy", True)]
    assert articles.queries == ["Storm clouds Statue Liberty during HurricaneSandy"]
    assert client.calls == [], "a lead section is short enough to read as it is"


def test_a_text_query_keeps_names_first_and_drops_links_mentions_and_stop_words() -> None:
    from retrieval.pipeline import text_query

    assert text_query("Don't need feds to solve the #bostonbombing when we have #4chan!! http://t.co/eXQTPZqqbG") == (
        "Don't need feds solve bostonbombing when"
    ), "at most six words, in the post's order"
    assert text_query("海蓝：我想起当年《盲山》拍完后，村里人问剧组") == "海蓝：我想起当年《盲山》拍完后，村里人问剧组"
