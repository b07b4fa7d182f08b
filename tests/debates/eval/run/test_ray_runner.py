"""Distributed runs on a local Ray cluster (one per module, 2 CPUs): the results file keeps the local
runner's guarantees when a worker or the driver is killed, backend limits hold for the whole
cluster, and the run folder stays locked while workers run."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
import ray

from debates.cli.main import app
from debates.eval.run.batch import BatchRunner
from debates.eval.records import RunManifest
from debates.eval.run.ratelimit import RateLimitedPool
from debates.eval.run.ray_runner import RayBatchRunner, RayOutcome
from debates.session import RunSession
from debates.eval.records import read_rows
from m3d_agents.backends.config import BackendConfig, BackendSettings
from m3d_agents.backends.factory import BackendPool
from m3d_agents.errors import InputError
from m3d_agents.sample import Sample
from tests.support.crashing_strategy import MARKER
from tests.support.openai_stub_server import StubOpenAIServer, completion_body
from tests.support.paths import REPO

pytestmark = pytest.mark.ray


@pytest.fixture(scope="module", autouse=True)
def cluster() -> Iterator[None]:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    yield
    ray.shutdown()


class CountingServer:
    """A loopback model server that answers a check after ``delay`` and records when each request
    arrived and how many were in flight at once; the label depends only on the request text."""

    def __init__(self, delay: float) -> None:
        self.delay = delay
        self.lock = threading.Lock()
        self.in_flight = self.peak = 0
        self.arrivals: list[float] = []
        self.server = StubOpenAIServer(self.respond)

    def respond(self, request: dict[str, Any], _n: int) -> tuple[int, dict[str, Any], float]:
        with self.lock:
            self.arrivals.append(time.monotonic())
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
        time.sleep(self.delay)
        with self.lock:
            self.in_flight -= 1
        text = json.dumps(request.get("messages", []))
        label = "fake" if sum(map(ord, text)) % 2 else "real"
        return 200, completion_body(json.dumps({"rationale": "checked", "label": label, "confidence": 0.7})), 0.0

    def __enter__(self) -> "CountingServer":
        self.server.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.__exit__(*exc)


def stub_pool(url: str, concurrency: int, rate_limits: dict[str, float] | None = None) -> RateLimitedPool:
    backend = BackendConfig(kind="vllm", base_url=url, model="test-model", cache=False, vision=False,
                            concurrency=concurrency, transport_retries=0)
    return RateLimitedPool(BackendSettings(backend="stub", backends={"stub": backend}), rate_limits=rate_limits)


def posts(count: int, marked: int | None = None) -> list[Sample]:
    return [Sample(id=f"p{i:02d}", text=(f"{MARKER} " if i == marked else "") + f"Post {i} about event {i * 7 % 11}",
                   gold_label=["fake", "real"][i % 2]) for i in range(count)]


MANIFEST = dict(dataset="test", backend="stub", seed=0, taxonomy="binary")


class Run:
    """A batch run of ``kind`` in its own run session (opened and closed around :meth:`run`), as m3d evaluate makes one."""

    def __init__(self, kind: type[BatchRunner], config: str, samples: list[Sample], pool: BackendPool, out: Path,
                 **options: Any) -> None:
        self.session = RunSession(config, pool, backend="stub", close_pool=True)
        self.runner = kind(config, samples, self.session, out, RunManifest(config=config, **MANIFEST), **options)

    @property
    def live_workers(self) -> dict[str, dict[str, Any]]:
        return self.runner.live_workers  # type: ignore[attr-defined, no-any-return]

    async def run(self) -> Any:
        async with self.session:
            return await self.runner.run()


def runner(kind: type[BatchRunner], config: str, samples: list[Sample], pool: BackendPool, out: Path, **options: Any) -> Run:
    return Run(kind, config, samples, pool, out, **options)


async def wait_for_rows(path: Path, count: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while (path.read_bytes().count(b"\n") if path.exists() else 0) < count:
        assert time.monotonic() < deadline, f"no {count} rows in {path} after {timeout} s"
        await asyncio.sleep(0.02)


def one_row_each(path: Path) -> dict[str, dict[str, Any]]:
    raw = [json.loads(line) for line in path.read_text().splitlines()]
    rows = {r["sample_id"]: r for r in raw}
    assert len(rows) == len(raw), "a sample has two rows"
    return rows


async def test_a_killed_worker_loses_no_row_repeats_none_and_its_samples_run_on_another_worker(tmp_path: Path) -> None:
    samples = posts(24)
    with CountingServer(delay=0.15) as server:
        local = await runner(BatchRunner, "check", samples, stub_pool(server.server.base_url, 8), tmp_path / "local",
                             concurrency=4).run()
        distributed = runner(RayBatchRunner, "check", samples, stub_pool(server.server.base_url, 8), tmp_path / "ray",
                             concurrency=4, workers=2)
        task = asyncio.ensure_future(distributed.run())
        await wait_for_rows(tmp_path / "ray" / "results.jsonl", 4)
        victim = distributed.live_workers["worker-0"]["pid"]
        os.kill(victim, signal.SIGKILL)
        outcome: RayOutcome = await task
    assert outcome.worker_deaths == 1 and outcome.retried and not outcome.given_up
    rows = one_row_each(tmp_path / "ray" / "results.jsonl")
    expected = {r.sample_id: (r.status, r.label, r.seed) for r in local.rows}
    assert {k: (r["status"], r["label"], r["seed"]) for k, r in rows.items()} == expected
    assert all(status == "ok" for status, _, _ in expected.values())


async def test_a_sample_that_keeps_killing_its_worker_is_recorded_as_an_error(tmp_path: Path) -> None:
    config = tmp_path / "crash.yaml"
    config.write_text("name: crash\nstrategy: crash_on_marker\ndelay_s: 0.2\n")
    samples = posts(8, marked=2)
    distributed = runner(RayBatchRunner, str(config), samples, stub_pool("http://127.0.0.1:9/v1", 8), tmp_path / "run",
                         concurrency=4, workers=2, max_worker_deaths=2, worker_imports=["tests.support.crashing_strategy"])
    outcome: RayOutcome = await distributed.run()
    rows = one_row_each(tmp_path / "run" / "results.jsonl")
    assert len(rows) == 8
    killer = rows["p02"]
    assert killer["status"] == "error" and killer["error"]["type"] == "WorkerDied"
    assert "2 times it ran this sample alone" in killer["error"]["message"]
    assert outcome.given_up == ["p02"]
    # The crowd it died in first ran again in isolation; only the killer was ever charged.
    assert outcome.worker_deaths == 3
    assert all(r["status"] == "ok" for k, r in rows.items() if k != "p02")


async def test_backend_concurrency_and_rate_limits_hold_across_all_workers(tmp_path: Path) -> None:
    with CountingServer(delay=0.4) as server:
        # Two workers with 4 samples each in flight would send 6 calls at once if each kept its own limit
        # of 3, and 10 calls a second if each kept its own rate.
        pool = stub_pool(server.server.base_url, 3, rate_limits={"stub": 600.0})
        outcome = await runner(RayBatchRunner, "check", posts(16), pool, tmp_path / "run", concurrency=8, workers=2).run()
    assert len(outcome.rows) == 16 and outcome.workers == 2
    assert server.peak == 3
    # The broker spaces the sends 0.1 s apart across the cluster; what the server sees also carries each
    # request's own trip through a loaded machine (two sends 0.1 s apart were seen 0.02 s apart while other
    # jobs ran), so the check allows for that and still refuses the near-simultaneous pairs that two
    # workers with rates of their own would send at once.
    gaps = [b - a for a, b in zip(server.arrivals, server.arrivals[1:])]
    assert len(server.arrivals) == 16 and min(gaps) > 0.01
    assert sorted(gaps)[len(gaps) // 2] >= 0.09


async def test_the_run_folder_is_locked_while_workers_run(tmp_path: Path) -> None:
    with CountingServer(delay=0.3) as server:
        out = tmp_path / "run"
        first = runner(RayBatchRunner, "check", posts(12), stub_pool(server.server.base_url, 8), out, concurrency=2, workers=2)
        task = asyncio.ensure_future(first.run())
        await wait_for_rows(out / "results.jsonl", 1)
        for kind, extra in ((RayBatchRunner, {"workers": 2}), (BatchRunner, {})):
            second = runner(kind, "check", posts(12), stub_pool(server.server.base_url, 8), out, concurrency=2, **extra)
            with pytest.raises(InputError, match="in use by a running m3d evaluate"):
                await second.run()
        outcome = await task
    assert len(one_row_each(out / "results.jsonl")) == 12 == len(outcome.rows)


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(parent, []).append(int(entry.name))
    found, stack = [], [pid]
    while stack:
        for child in children.get(stack.pop(), []):
            found.append(child)
            stack.append(child)
    return found


def test_a_killed_driver_resumes_to_every_row_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``kill -9`` of ``m3d evaluate --workers 2`` mid-run, then the same command: every sample has
    exactly one row, and the samples finished before the kill did not run again."""
    from typer.testing import CliRunner

    with CountingServer(delay=0.2) as server:
        (tmp_path / "m3d.yaml").write_text(
            "backends:\n"
            f"  stub: {{kind: vllm, base_url: '{server.server.base_url}', model: test-model, cache: false, vision: false,"
            " concurrency: 8, transport_retries: 0}\n"
        )
        (tmp_path / "posts.jsonl").write_text("".join(
            json.dumps({"id": s.id, "text": s.text, "label": s.gold_label}) + "\n" for s in posts(30)))
        arguments = ["evaluate", "--config", "check", "--dataset", "jsonl:posts.jsonl", "-o", "text=text", "-o",
                     "label=label", "-o", "id=id", "--backend", "stub", "--config-file", "m3d.yaml", "--concurrency", "4",
                     "--out", "run", "--no-progress", "--workers", "2"]
        results = tmp_path / "run" / "results.jsonl"
        driver = subprocess.Popen([sys.executable, "-c", "from debates.cli.main import app; app()", *arguments],
                                  cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started = descendants(driver.pid)
        try:
            asyncio.run(wait_for_rows(results, 6))
            started = sorted(set(started) | set(descendants(driver.pid)))
            driver.send_signal(signal.SIGKILL)
            driver.wait(timeout=30)
        finally:
            if driver.poll() is None:
                driver.kill()
            for pid in started:  # Ray's helpers of the killed driver's own cluster end on their own, later
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        before = {r.sample_id for r in read_rows(results)[0]}
        assert 6 <= len(before) < 30
        requests_before = len(server.arrivals)
        monkeypatch.chdir(tmp_path)
        resumed = CliRunner().invoke(app, arguments)
        assert resumed.exit_code == 0, resumed.output
        assert f"({30 - len(before)} this time)" in resumed.output.replace("\n", " ")
        assert len(server.arrivals) - requests_before == 30 - len(before)
    rows = one_row_each(results)
    assert len(rows) == 30 and all(r["status"] == "ok" for r in rows.values())


async def test_a_configuration_that_cannot_load_fails_before_any_worker_starts(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no configuration 'no-such-configuration'"):
        runner(RayBatchRunner, "no-such-configuration", posts(2), stub_pool("http://127.0.0.1:9/v1", 8), tmp_path / "run",
               workers=2)
    assert not (tmp_path / "run" / "results.jsonl").exists()
