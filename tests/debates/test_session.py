"""The run session: what it opens once per run (pool, evidence sources, evidence policy), what each sample's
run context gets from it, and that it closes everything after a run that ends, fails or is cancelled."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any, Mapping, Sequence

import pytest
from autogen_core.models import LLMMessage

from debates.config_loader import load_config, with_overrides
from debates.session import RunSession
from m3d_agents.backends.factory import BackendPool
from m3d_agents.errors import InputError
from m3d_agents.evidence import Evidence
from m3d_agents.fence import OPEN, RULE
from m3d_agents.sample import Sample
from retrieval.config import RetrievalConfig
from retrieval.runpath import RunRetrieval
from tests.support.debate import SAMPLE, answer, seat_pool
from tests.support.paths import shared_data
from tests.support.scripted import ScriptedClient, scripted_backend

CHECKED = '{"rationale": "looked", "label": "real", "confidence": 0.6}'
QUIET = RetrievalConfig(reverse_image=[], web_search=[], caption_search=False, summary={"enabled": False})
"""A retrieval block that asks no provider: opening it opens the store and the fetcher, and nothing goes online."""


class ClosingPool(BackendPool):
    """A pool that remembers being closed."""

    closed = 0

    async def close(self) -> None:
        self.closed += 1
        await super().close()


def scripted_pool(script: Any = None, delay_s: float = 0.0) -> tuple[ClosingPool, ScriptedClient]:
    client = ScriptedClient(script if script is not None else (lambda messages, kwargs: CHECKED), delay_s=delay_s)
    pool = ClosingPool()
    pool.add(scripted_backend(client, name="scripted"))
    return pool, client


def check_with(retrieval: RetrievalConfig | None) -> Any:
    return with_overrides(load_config("check"), parse_retries=0, retrieval=retrieval)


def start_http(sources: RunRetrieval) -> None:
    """Give the fetcher a live HTTP client (it makes one on first use), to see it closed after the run."""
    assert sources.fetcher is not None and sources.fetcher.client is not None


def assert_closed(sources: RunRetrieval, pool: ClosingPool) -> None:
    assert sources.store is not None and sources.fetcher is not None
    with pytest.raises(sqlite3.ProgrammingError):
        len(sources.store)
    assert sources.fetcher._client is None, "the fetcher's HTTP client is closed"
    assert pool.closed == 1


async def test_a_session_opens_the_evidence_sources_once_for_every_sample_and_closes_them_and_its_pool(tmp_path: Path) -> None:
    pool, client = scripted_pool()
    session = RunSession(check_with(QUIET), pool, backend="scripted", evidence_store=tmp_path / "ev.sqlite", close_pool=True)
    async with session:
        sources = session.sources
        assert session.mode == "record", "a configuration with a retrieval block records by default"
        start_http(sources)
        first = await session.run(Sample(text="first post"))
        second = await session.run(Sample(text="second post"))
        assert session.sources is sources
    assert [v.evidence_report.mode for v in (first, second) if v.evidence_report] == ["record", "record"]
    assert first.label == second.label == "real" and len(client.calls) == 2
    assert_closed(sources, pool)
    await session.close()  # closing twice is harmless
    assert pool.closed == 1


async def test_a_failing_sample_still_closes_the_session(tmp_path: Path) -> None:
    def broken(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
        raise RuntimeError("the model server went away")

    pool, _ = scripted_pool(broken)
    session = RunSession(check_with(QUIET), pool, backend="scripted", evidence_store=tmp_path / "ev.sqlite", close_pool=True)
    with pytest.raises(RuntimeError, match="went away"):
        async with session:
            sources = session.sources
            start_http(sources)
            await session.run(Sample(text="a post"))
    assert_closed(sources, pool)


async def test_a_cancelled_run_still_closes_the_session(tmp_path: Path) -> None:
    pool, client = scripted_pool(delay_s=30.0)
    session = RunSession(check_with(QUIET), pool, backend="scripted", evidence_store=tmp_path / "ev.sqlite", close_pool=True)
    opened: list[RunRetrieval] = []

    async def run() -> None:
        async with session:
            opened.append(session.sources)
            start_http(session.sources)
            await session.run(Sample(text="a post"))

    task = asyncio.ensure_future(run())
    while not client.calls:
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert_closed(opened[0], pool)


async def test_without_a_retrieval_block_retrieval_is_off_and_a_given_pool_stays_open() -> None:
    pool, _ = scripted_pool()
    async with RunSession("check", pool, backend="scripted") as session:
        assert session.mode == "off"
        assert (session.sources.evidence_source, session.sources.searchers) == (None, {})
        verdict = await session.run(Sample(text="a post"))
    assert verdict.evidence_report is not None and verdict.evidence_report.mode == "off"
    assert pool.closed == 0, "the caller's pool is the caller's to close"


async def test_an_opening_that_fails_closes_the_pool_the_session_opened(tmp_path: Path) -> None:
    pool, _ = scripted_pool()
    session = RunSession(check_with(QUIET), pool, retrieval="replay", evidence_store=tmp_path / "missing.sqlite",
                         close_pool=True)
    with pytest.raises(InputError, match="replay-only mode needs an existing store"):
        async with session:
            pass
    assert pool.closed == 1


async def test_modes_live_and_replay_open_the_store_as_asked(tmp_path: Path) -> None:
    store = tmp_path / "ev.sqlite"
    pool, _ = scripted_pool()
    async with RunSession(check_with(QUIET), pool, backend="scripted", retrieval="live", evidence_store=store) as live:
        assert live.mode == "live" and live.sources.store is not None and live.sources.store.mode == "refresh"
    async with RunSession(check_with(QUIET), pool, backend="scripted", retrieval="replay", evidence_store=store) as replay:
        assert replay.mode == "replay" and replay.sources.store is not None and replay.sources.store.mode == "replay"
        verdict = await replay.run(Sample(text="a post"))
    assert verdict.evidence_report is not None and verdict.evidence_report.network_fetches == 0
    async with RunSession(check_with(QUIET), pool, backend="scripted", retrieval="off") as off:
        assert off.mode == "off" and off.sources.store is None


def test_a_replayed_trace_takes_no_other_retrieval_option(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="leave out --retrieval and --evidence-store"):
        RunSession("check", BackendPool(), replay_mr2=tmp_path, retrieval="live")


async def test_a_replayed_mr2_trace_answers_from_its_own_files() -> None:
    root = shared_data("mr2-sample")
    pool, client = scripted_pool()
    session = RunSession("check", pool, backend="scripted", replay_mr2=root)
    with pytest.raises(InputError, match="needs --sample-id"):
        session.trace_sample(None)
    async with session:
        from retrieval.providers.mr2_trace import MR2Trace

        sample = session.trace_sample(MR2Trace(root).ids()[0])
        verdict = await session.run(sample)
    report = verdict.evidence_report
    assert report is not None and report.mode == "replay" and report.network_fetches == 0 and report.kept >= 1
    fences = client.calls[0].prompt.count(OPEN) - client.calls[0].prompt.count(RULE)
    assert fences == report.kept, "the checker read the recorded pages, fenced (and was told what a fence is)"


async def test_the_recipe_of_a_session_opens_the_same_session_elsewhere(tmp_path: Path) -> None:
    pool, _ = scripted_pool()
    async with RunSession(check_with(QUIET), pool, backend="scripted", evidence_store=tmp_path / "ev.sqlite") as session:
        recipe = session.spec()
    assert (recipe.config, recipe.backend, recipe.retrieval) == (session.config, "scripted", "record")
    assert recipe.evidence_store == (tmp_path / "ev.sqlite").resolve()
    other, _ = scripted_pool()
    async with recipe.session(other) as reopened:
        assert reopened.mode == "record" and reopened.backend_name == "scripted"


async def test_a_default_query_answerer_answers_the_debaters_when_retrieval_is_off() -> None:
    class Desk:
        def __init__(self) -> None:
            self.asked: list[str] = []

        async def answer(self, query: str, sample: Sample, ledger: Any = None) -> list[Evidence]:
            self.asked.append(query)
            return [Evidence(kind="corpus", text=f"ANSWER-TO[{query}]: a composite")]

    scripts = {
        "agent_a": [answer("real", "A1") + "\nQUERY: who took the storm photo", answer("fake", "A2")],
        "agent_b": [answer("fake", "B1"), answer("fake", "B2")],
        "agent_c": [answer("fake", "C1"), answer("fake", "C2")],
    }
    config, pool, clients = seat_pool(with_overrides(load_config("disambiguation-three"), retrieval=None), scripts)
    desk = Desk()
    async with RunSession(config, pool, retrieval="off", default_query_answerer=desk) as session:
        verdict = await session.run(SAMPLE)
    assert desk.asked == ["who took the storm photo"]
    assert "ANSWER-TO[who took" in clients["agent_b"].calls[1].prompt
    assert verdict.evidence_report is not None and verdict.evidence_report.mode == "off"
