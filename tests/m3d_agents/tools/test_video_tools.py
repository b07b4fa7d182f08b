"""ClipScout and FactProbe: cards, schemas, budgets, filters, reports, and the grid saved as cited evidence."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from debates.cli.main import app
from m3d_agents.evidence import Evidence
from m3d_agents.media.images import prepare_sample
from m3d_agents.sample import Sample, VideoRef
from m3d_agents.tools.analysis.clip_scout import ClipScoutArgs, clip_scout
from m3d_agents.tools.analysis.fact_probe import REPORT_CHARS, build_report, fact_probe, is_social
from m3d_agents.tools.cards import ToolContext
from m3d_agents.tools.catalogue import REGISTRY
from m3d_agents.sample import SampleMetadata
from tests.support.videos import colour_of_second, make_clip


class DictAnswerer:
    """A query answerer that answers from a dictionary and remembers what it was asked."""

    def __init__(self, answers: dict[str, list[Evidence]]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    async def answer(self, query: str, sample: Sample, ledger: object = None) -> list[Evidence]:
        self.asked.append(query)
        return list(self.answers.get(query, []))


def hit(domain: str, title: str, snippet: str = "a snippet", reliability: str = "unknown") -> Evidence:
    return Evidence(kind="answer", url=f"https://{domain}/page", domain=domain, title=title, text=snippet,
                    reliability=reliability)  # type: ignore[arg-type]


@pytest.fixture
def video_context(tmp_path: Path) -> ToolContext:
    clip = make_clip(tmp_path / "clip.mp4", seconds=6)
    prepared = prepare_sample(Sample(text="a flood in the city", video=VideoRef(path=clip)))
    return ToolContext(prepared=prepared, budgets={"clip_scout": 1, "fact_probe": 3}, artifacts_dir=tmp_path / "artifacts")


def test_m3d_tools_lists_both_tools_with_their_cards() -> None:
    result = CliRunner().invoke(app, ["tools"], env={"COLUMNS": "400", "TERM": "dumb"})
    assert result.exit_code == 0
    flat = " ".join(result.output.split())
    assert "clip_scout (video" in flat and "fact_probe (web" in flat
    assert "2x2" in flat and "social media left out" in flat


def test_function_tool_schemas(video_context: ToolContext) -> None:
    tools = {t.name: t.schema for t in REGISTRY.function_tools(video_context, ["clip_scout", "fact_probe"])}
    assert tools["fact_probe"]["parameters"]["properties"]["query"]["type"] == "string"
    for name in ("start_s", "end_s"):
        assert tools["clip_scout"]["parameters"]["properties"][name]["type"] == "number"
    assert ClipScoutArgs.model_validate({"start_s": "00:03", "end_s": "1:05"}).end_s == 65.0


def test_clip_scout_saves_the_grid_by_hash_and_cites_it(video_context: ToolContext) -> None:
    text = clip_scout(video_context, 2.0, 4.0)
    [artifact] = video_context.artifacts
    assert artifact.path is not None and artifact.path.name == f"{artifact.sha256}.png" and artifact.path.is_file()
    [evidence] = video_context.evidence
    assert evidence.kind == "video_frame" and evidence.artifact == str(artifact.path) and evidence.id in text
    import re

    times = [float(t) for t in re.findall(r"(\d+\.\d\d) s", text)]
    assert times == pytest.approx([2.25, 2.75, 3.25, 3.75], abs=0.06), "the four frame times are listed"
    top_left = np.asarray(artifact.image)[:5, :5].reshape(-1, 3).mean(axis=0)
    assert np.allclose(top_left, colour_of_second(2), atol=25)


def test_a_second_clip_scout_call_is_refused_and_counted(video_context: ToolContext) -> None:
    clip_scout(video_context, 0, 2)
    assert clip_scout(video_context, 3, 5) == "clip_scout budget used (1 per sample)"
    assert video_context.refusals["clip_scout"] == 1 and len(video_context.artifacts) == 1


def test_a_window_past_the_end_is_an_error_observation(video_context: ToolContext) -> None:
    text = clip_scout(video_context, 30, 40)
    assert text.startswith("clip_scout: error: start_s:") and "6.0 s" in text
    assert video_context.stats["clip_scout.errors"] == 1


def test_without_a_video_file_clip_scout_is_unavailable() -> None:
    context = ToolContext(prepared=prepare_sample(Sample(text="ids only", video=VideoRef(video_id="3xa1"))))
    assert clip_scout(context, 0, 3) == "clip_scout: unavailable: no video file"


async def test_fact_probe_keeps_the_top_results_and_drops_social_and_leaked_sources(video_context: ToolContext) -> None:
    leaked = hit("snopes.com", "Fact check: flood video", reliability="factcheck").model_copy(
        update={"kept": False, "reason": "dropped by leakage rule factcheck_domain: snopes.com is a fact-checking site"})
    results = [
        hit("tiktok.com", "a TikTok repost"),
        hit("www.reuters.com", "Floods hit the city", "Heavy rain flooded streets on 12 May."),
        hit("m.youtube.com", "a video upload"),
        leaked,
        *[hit(f"news{i}.example.org", f"Report {i}") for i in range(6)],
    ]
    searcher = DictAnswerer({"city flood May": results})
    video_context.searchers = {"web": searcher}
    video_context.settings["fact_probe_top_k"] = 5
    report = await fact_probe(video_context, "city flood May")
    assert searcher.asked == ["city flood May"]
    assert video_context.stats["fact_probe.dropped_social"] == 2 and video_context.stats["fact_probe.dropped_leak"] == 1
    assert "TikTok" not in report and "snopes" not in report and "youtube" not in report
    lines = report.splitlines()[1:]
    assert len(lines) == 5 and lines[0].startswith("[1] Floods hit the city — Heavy rain flooded streets on 12 May.")
    assert "https://www.reuters.com/page" in lines[0] and video_context.retrieved[0].id in lines[0]
    assert len(report) <= REPORT_CHARS


async def test_fact_probe_leaves_leakage_to_the_runs_filter(video_context: ToolContext) -> None:
    """A fact-checking page that the run's leakage settings let through (``leakage.enabled: false``) is reported."""
    video_context.searchers = {"web": DictAnswerer({"flood": [hit("snopes.com", "Fact check: flood video", reliability="factcheck")]})}
    report = await fact_probe(video_context, "flood")
    assert "snopes.com" in report and video_context.stats["fact_probe.dropped_leak"] == 0


def test_the_report_stays_within_its_size_in_whole_lines() -> None:
    long = [hit(f"site{i}.org", "T" * 150, "S" * 400) for i in range(10)]
    report = build_report("q", long)
    assert len(report) <= REPORT_CHARS and all(line.endswith("/page") for line in report.splitlines()[1:])


async def test_fact_probe_budget_and_no_search(video_context: ToolContext) -> None:
    assert await fact_probe(video_context, "q") == "fact_probe: unavailable: no web search is configured for this run (see --retrieval)"
    video_context.searchers = {"web": DictAnswerer({})}
    await fact_probe(video_context, "q")
    await fact_probe(video_context, "q")
    assert await fact_probe(video_context, "q") == "fact_probe budget used (3 per sample)"


@pytest.mark.parametrize("domain, social", [("x.com", True), ("mobile.twitter.com", True), ("notx.com", False),
                                            ("bilibili.com", True), ("bbc.co.uk", False), (None, False)])
def test_social_domains_match_whole_labels(domain: str | None, social: bool) -> None:
    assert is_social(domain) is social


async def test_a_second_run_replays_from_the_store_without_a_provider(tmp_path: Path) -> None:
    from retrieval.answerer import SearchAnswerer
    from retrieval.providers.base import SearchHit
    from retrieval.store import EvidenceStore

    class Provider:
        name = "dict"

        def __init__(self) -> None:
            self.calls = 0

        async def search(self, query: str, limit: int = 10) -> list[SearchHit]:
            self.calls += 1
            return [SearchHit(url="https://apnews.com/a", title="Flood", snippet="Rain flooded the city.", provider="dict")]

    class Unset:
        name = "dict"

        async def search(self, query: str, limit: int = 10) -> list[SearchHit]:
            raise AssertionError("replay must not ask the provider")

    sample = Sample(text="a flood", metadata=SampleMetadata())
    provider = Provider()
    recorded = SearchAnswerer([provider], store=EvidenceStore(tmp_path / "store.sqlite", "record"))
    first = ToolContext(prepared=prepare_sample(sample), searchers={"web": recorded})
    replayed = SearchAnswerer([Unset()], store=EvidenceStore(tmp_path / "store.sqlite", "replay"))
    second = ToolContext(prepared=prepare_sample(sample), searchers={"web": replayed})
    assert await fact_probe(first, "city flood") == await fact_probe(second, "city flood")
    assert provider.calls == 1
