"""The parser pool: a worker that crashes, hangs, runs out of memory or raises costs its item alone, the pool
starts when first needed and ends with its run, and no worker outlives the process that started it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Iterator

import pytest

from debates.config_loader import load_config, with_overrides
from debates.session import RunSession
from m3d_agents.backends.factory import BackendPool
from m3d_agents.errors import InputError
from m3d_agents.isolation import IsolationSettings, Item, ItemLost, ParserPool, current_pool, using
from tests.support import hostile_parsers
from tests.support.debate import SAMPLE
from tests.support.hostile_inputs import ARTICLE, make_trace
from tests.support.paths import REPO
from tests.support.scripted import ScriptedClient, scripted_backend

PAGE = Item("page", "https://news.example/a", "the extractor")


@pytest.fixture
def pool() -> Iterator[ParserPool]:
    parsers = ParserPool(IsolationSettings(workers=2, timeout_s=3, memory_mb=256, items_per_worker=50))
    yield parsers
    parsers.close()


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def wait_gone(pids: list[int], seconds: float = 15.0) -> list[int]:
    """The pids still running after up to ``seconds``."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(alive(pid) for pid in pids):
        time.sleep(0.1)
    return [pid for pid in pids if alive(pid)]


@pytest.mark.parametrize("failure", list(hostile_parsers.FAILURES))
def test_a_worker_that_crashes_hangs_or_allocates_costs_its_item_alone(pool: ParserPool, failure: str) -> None:
    function, words = hostile_parsers.FAILURES[failure]
    futures = [pool.submit(os.getpid), pool.submit(function), pool.submit(os.getpid)]
    with pytest.raises(ItemLost) as lost:
        pool.outcome(PAGE, futures[1])
    assert lost.value.line.startswith(f"page https://news.example/a not read: the extractor {words}")
    assert {"crashed (signal 11)": "", "timed out after": "3 s", "needed more than": "256 MiB"}[words] in lost.value.line
    assert isinstance(lost.value, InputError), "callers that handle unreadable input handle a lost item the same way"
    pids = [pool.outcome(PAGE, futures[0]), pool.outcome(PAGE, futures[2]), pool.call(PAGE, os.getpid)]
    assert all(pid != os.getpid() for pid in pids), "the items ran in workers, and the pool went on after the loss"


def test_what_a_parser_raises_comes_back_as_the_same_error_or_as_a_lost_item(pool: ParserPool) -> None:
    with pytest.raises(InputError) as refused:
        pool.call(PAGE, hostile_parsers.refuse, "images[0]", "not an image")
    assert (refused.value.field, refused.value.problem) == ("images[0]", "not an image") and not isinstance(refused.value, ItemLost)
    with pytest.raises(ItemLost, match=r"the extractor failed \(ZeroDivisionError: division by zero\)"):
        pool.call(PAGE, hostile_parsers.divide, 1, 0)


def test_a_warning_a_worker_raised_is_shown_in_the_caller_s_process_once(pool: ParserPool) -> None:
    with pytest.warns(UserWarning, match="an odd byte in the header") as shown:
        assert pool.call(PAGE, hostile_parsers.warn_twice, "an odd byte in the header") == 1
    assert [type(w.message).__name__ for w in shown] == ["ParserWarning"], "its category by name, once per message"
    assert shown[0].filename.endswith("hostile_parsers.py")


def test_workers_are_replaced_after_their_number_of_items() -> None:
    parsers = ParserPool(IsolationSettings(workers=1, items_per_worker=3))
    try:
        pids = [parsers.call(PAGE, os.getpid) for _ in range(7)]
    finally:
        parsers.close()
    assert pids[:3] == [pids[0]] * 3 and len(set(pids)) == 3


async def test_many_callers_share_the_bounded_pool(pool: ParserPool) -> None:
    pids = await asyncio.gather(*(pool.run(PAGE, os.getpid) for _ in range(24)))
    assert 1 <= len(set(pids)) <= 2 and os.getpid() not in pids


async def test_a_cancelled_caller_stops_its_item(pool: ParserPool) -> None:
    waiting = asyncio.ensure_future(pool.run(PAGE, hostile_parsers.hang))
    await asyncio.sleep(1.0)
    before = pool.worker_pids()
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert await pool.run(PAGE, hostile_parsers.divide, 6, 3) == 2.0
    assert len(before) == 2 and len(await asyncio.to_thread(wait_gone, before)) == 1, "the worker of the cancelled item was stopped"


def test_a_closed_pool_leaves_no_worker_and_takes_no_item(pool: ParserPool) -> None:
    assert not pool.started
    pool.call(PAGE, os.getpid)
    pids = pool.worker_pids()
    assert pool.started and len(pids) == 2
    pool.close()
    assert wait_gone(pids) == []
    with pytest.raises(ItemLost, match="could not run"):
        pool.call(PAGE, os.getpid)


def test_outside_a_run_the_process_default_pool_parses() -> None:
    assert current_pool() is current_pool()
    custom = ParserPool()
    with using(custom):
        assert current_pool() is custom
    assert current_pool() is not custom
    custom.close()


async def test_the_session_starts_its_pool_when_first_needed_and_ends_it_when_it_closes(tmp_path: Path) -> None:
    trace = tmp_path / "trace"
    make_trace(trace, {"https://news.example/a": ARTICLE})
    pool = scripted_pool()
    session = RunSession(with_overrides(load_config("check"), parse_retries=0), pool, backend="scripted", replay_mr2=trace)
    async with session:
        parsers = session.parsers
        assert not parsers.started, "opening a session starts no process"
        verdict = await session.run(session.trace_sample("1"))
        pids = parsers.worker_pids()
        assert pids and verdict.evidence_report is not None and verdict.evidence_report.kept == 1
    assert wait_gone(pids) == [], "the session's workers ended with it"
    async with RunSession(with_overrides(load_config("check"), parse_retries=0), scripted_pool(),
                          backend="scripted") as quiet:
        await quiet.run(SAMPLE)
        assert not quiet.parsers.started, "a run with nothing to parse starts no worker"


def scripted_pool() -> BackendPool:
    pool = BackendPool()
    pool.add(scripted_backend(ScriptedClient(lambda messages, kwargs: '{"rationale": "r", "label": "real", "confidence": 0.5}'),
                              name="scripted"))
    return pool


def run_script(mode: str, trace: Path) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([sys.executable, "-m", "tests.support.isolation_script", mode, str(trace)], cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    root = tmp_path / "trace"
    make_trace(root, {"https://news.example/good": ARTICLE, "https://crash.example/a": ARTICLE})
    return root


def test_the_run_process_never_imports_the_page_parsers_and_names_the_page_a_parser_lost(trace: Path) -> None:
    process = run_script("run", trace)
    out, _ = process.communicate(timeout=300)
    assert process.returncode == 0, out
    report = json.loads(out.strip().splitlines()[-1])
    assert report["imported"] == [], "newspaper3k, trafilatura and lxml's parsers were imported by the run process"
    assert report["label"] == "true", "the run reached its verdict"
    assert report["lost"] == ["page https://crash.example/a not read: the extractor crashed (signal 11)"]
    assert wait_gone(report["pids"]) == []


@pytest.mark.parametrize("ending", ["kill -9", "Ctrl-C"])
def test_no_worker_outlives_its_process(trace: Path, ending: str) -> None:
    process = run_script("hold", trace)
    assert process.stdout is not None
    line = process.stdout.readline()
    pids = json.loads(line)["pids"]
    assert len(pids) == 2 and all(alive(pid) for pid in pids), "a page hangs in one of two live workers"
    process.send_signal(signal.SIGKILL if ending == "kill -9" else signal.SIGINT)
    process.wait(timeout=60)
    assert wait_gone(pids) == [], f"workers left behind after {ending}"


def test_every_limit_is_a_documented_setting_of_every_configuration() -> None:
    from m3d_agents.config_reference import config_fields

    rows = {row.name: row for row in config_fields(load_config("agentfact"))}
    for name in ("workers", "timeout_s", "analysis_timeout_s", "memory_mb", "items_per_worker"):
        row = rows[f"isolation.{name}"]
        assert row.description and row.default == IsolationSettings.model_fields[name].default
