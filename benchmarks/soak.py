"""A long batch run against a model server that fails now and then: memory, rows and time over 10,000 samples.

A loopback OpenAI-compatible server (asyncio, in a child process, so its CPU and memory are not
counted) answers every request after a lognormal delay (median ``--median`` s, 95th percentile
``--p95`` s), and ``--faults`` of the requests (5% by default, seeded by the sample and the attempt)
get, in equal shares: HTTP 500, HTTP 429 with ``Retry-After: 0``, a connection closed without an
answer, a 200 whose body is not JSON, or a completion that is not a readable answer. The run goes
through the real path: :class:`~debates.eval.run.batch.BatchRunner` (one fsynced row per sample),
``run_sample``, the ``check`` configuration's AutoGen agent, the lean HTTP client with its retries,
at ``--concurrency`` samples in flight.

Printed on stdout, exactly:

    peak RSS MB: X                       (the benchmark process's resident memory at its highest)
    RSS growth over the last half %: X   (resident memory when the last row was written, against when half were)
    rows lost or repeated: N             (sample ids missing from results.jsonl, plus ids written twice)
    wall / ideal: X                      (the run's wall time over the ideal one, below)

The ideal is computed from what the server saw: each sample's model time is the span from its
first request's arrival to its last answer (so the waits its faults cost, retries and the retry
policy's backoff included, count as model time), and the samples are scheduled in order on
``--concurrency`` slots with no overhead at all. Targets: growth under 10%, no row lost or
repeated, ``wall / ideal`` at most 1.10. What was injected, the load average and the CPU other
processes took meanwhile go to stderr.

    PYTHONPATH=$PWD python benchmarks/soak.py [--samples 10000] [--concurrency 256] [--faults 0.05]
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import multiprocessing
import os
import random
import re
import sys
import tempfile
import threading
import time
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from benchmarks.throughput import ideal_schedule  # noqa: E402

FAULTS = ("http_500", "http_429", "close", "not_json", "garbage")
POST = re.compile(rb"Soak post (\d+)")


# ---- the server (child process) -------------------------------------------------------------

def answer_for(request: dict[str, Any], number: int) -> dict[str, Any]:
    """A valid answer to the check's request: JSON for its schema (or the prose format when none is sent)."""
    form = request.get("response_format") or {}
    schema = (form.get("json_schema") or {}).get("schema") or form.get("schema")
    label = "fake" if number % 2 else "real"
    text = (json.dumps({"rationale": "the caption and the picture agree", "label": label, "confidence": 0.7})
            if schema else f"The caption and the picture agree.\nFINAL ANSWER: {label}\nCONFIDENCE: 0.7")
    return {"id": "soak", "object": "chat.completion", "model": "soak-model",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 300, "completion_tokens": 40}}


def serve(port_pipe: Any, seed: int, fault_rate: float, median: float, p95: float) -> None:
    """The server process: prints nothing, sends its port through ``port_pipe``, logs every request."""
    rng = random.Random(seed)
    mu, sigma = math.log(median), math.log(p95 / median) / 1.6448536
    log: list[tuple[int, float, float, str]] = []
    attempts: Counter[int] = Counter()

    def fault_of(sample: int) -> str | None:
        attempts[sample] += 1
        digest = hashlib.sha256(f"{seed}:{sample}:{attempts[sample]}".encode()).digest()
        if int.from_bytes(digest[:4], "big") / 2**32 >= fault_rate:
            return None
        return FAULTS[digest[4] % len(FAULTS)]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                first = head.split(b"\r\n", 1)[0]
                length = int(re.search(rb"(?i)content-length:\s*(\d+)", head).group(1)) if b"ength" in head else 0  # type: ignore[union-attr]
                body = await reader.readexactly(length) if length else b""
                started = time.time()
                if first.startswith(b"GET ") and b"/stats" in first:
                    payload = json.dumps({"log": log, "faults": Counter(f for *_, f in log if f)}).encode()
                    writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                                 + str(len(payload)).encode() + b"\r\n\r\n" + payload)
                    await writer.drain()
                    continue
                found = POST.search(body)
                sample = int(found.group(1)) if found else -1
                fault = fault_of(sample)
                await asyncio.sleep(rng.lognormvariate(mu, sigma) if fault is None else 0.05)
                if fault == "close":
                    log.append((sample, started, time.time(), fault))
                    writer.close()
                    return
                status, extra, data = 200, b"", b""
                if fault == "http_500":
                    status, data = 500, b'{"error": {"message": "the engine died"}}'
                elif fault == "http_429":
                    status, extra, data = 429, b"Retry-After: 0\r\n", b'{"error": {"message": "slow down"}}'
                elif fault == "not_json":
                    data = b"<html>502 from a proxy</html>"
                elif fault == "garbage":
                    garbled = answer_for({}, 0)
                    garbled["choices"][0]["message"]["content"] = "I cannot say anything useful about this post."
                    data = json.dumps(garbled).encode()
                else:
                    data = json.dumps(answer_for(json.loads(body or b"{}"), len(log))).encode()
                writer.write(f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\nContent-Length: {len(data)}\r\n"
                             .encode() + extra + b"\r\n" + data)
                await writer.drain()
                log.append((sample, started, time.time(), fault or ""))
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    async def main() -> None:
        server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
        port_pipe.send(server.sockets[0].getsockname()[1])
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def server_stats(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{url}/stats", timeout=60) as answer:
        return dict(json.loads(answer.read()))


# ---- the measurements -----------------------------------------------------------------------

def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


class RssWatch:
    """Samples this process's resident memory every 50 ms, for its peak."""

    def __init__(self) -> None:
        self.peak = rss_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.05):
            self.peak = max(self.peak, rss_mb())

    def __enter__(self) -> "RssWatch":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, rss_mb())


def lost_or_repeated(results: Path, expected: set[str]) -> int:
    """Ids missing from the results file plus ids written more than once (torn lines count as lost)."""
    ids: Counter[str] = Counter()
    for line in results.read_bytes().split(b"\n"):
        try:
            ids[json.loads(line)["sample_id"]] += 1
        except (ValueError, KeyError, TypeError):
            continue
    return len(expected - set(ids)) + sum(count - 1 for count in ids.values() if count > 1)


def other_cpu_s() -> float:
    """CPU seconds the whole machine spent, for the share other processes took."""
    with open("/proc/stat") as handle:
        fields = [int(x) for x in handle.readline().split()[1:]]
    return (fields[0] + fields[1] + fields[2]) / os.sysconf("SC_CLK_TCK")


async def soak(args: argparse.Namespace, url: str, folder: Path) -> dict[str, Any]:
    from debates.eval.records import RESULTS, RunManifest
    from debates.eval.run.batch import BatchRunner, Tally
    from debates.session import RunSession
    from m3d_agents.backends.config import BackendConfig, BackendSettings
    from m3d_agents.backends.factory import BackendPool
    from m3d_agents.sample import Sample

    backend = BackendConfig(kind="vllm", base_url=url, model="soak-model", cache=False, vision=False,
                            concurrency=args.concurrency, transport_retries=4, timeout_s=60.0, deadline_s=300.0)
    pool = BackendPool(BackendSettings(backend="soak", backends={"soak": backend}))
    samples = [Sample(id=f"s{i:05d}", text=f"Soak post {i}: the river rose over the old bridge this morning.",
                      gold_label="fake" if i % 2 else "real") for i in range(args.samples)]
    manifest = RunManifest(config="check", dataset="soak", backend="soak", seed=0, taxonomy="binary")
    half: dict[str, float] = {}

    def progress(tally: Tally) -> None:
        if tally.done >= args.samples // 2 and "rss" not in half:
            half["rss"] = rss_mb()
        if tally.done >= args.samples and "end" not in half:
            half["end"] = rss_mb()

    cpu_before, own_before = other_cpu_s(), time.process_time()
    started = time.time()
    with RssWatch() as watch:
        async with RunSession("check", pool, backend="soak") as session:
            runner = BatchRunner("check", samples, session, folder / "run", manifest, concurrency=args.concurrency,
                                 on_progress=progress)
            outcome = await runner.run()
    end_rss = half.get("end", rss_mb())
    wall = time.time() - started
    machine_cpu = other_cpu_s() - cpu_before
    await pool.close()
    return {
        "wall": wall, "started": started, "peak": watch.peak, "half_rss": half.get("rss", end_rss), "end_rss": end_rss,
        "lost_or_repeated": lost_or_repeated(folder / "run" / RESULTS, {s.id for s in samples}),
        "errors": outcome.tally.errors, "own_cpu": time.process_time() - own_before, "machine_cpu": machine_cpu,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=256)
    parser.add_argument("--faults", type=float, default=0.05)
    parser.add_argument("--median", type=float, default=2.0, help="median model latency, seconds")
    parser.add_argument("--p95", type=float, default=5.0, help="95th percentile of the model latency, seconds")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()

    context = multiprocessing.get_context("spawn")
    receive, send = context.Pipe(duplex=False)
    server = context.Process(target=serve, args=(send, args.seed, args.faults, args.median, args.p95), daemon=True)
    server.start()
    url = f"http://127.0.0.1:{receive.recv()}/v1"
    load_before = os.getloadavg()
    try:
        with tempfile.TemporaryDirectory(prefix="m3d-soak-") as folder:
            os.environ["M3D_CACHE_DIR"] = str(Path(folder) / "cache")
            figures = asyncio.run(soak(args, url, Path(folder)))
            stats = server_stats(url)
    finally:
        server.terminate()
        server.join()

    spans: dict[int, list[float]] = {}
    for sample, start, end, _ in stats["log"]:
        if sample >= 0:
            low, high = spans.get(sample, [start, end])
            spans[sample] = [min(low, start), max(high, end)]
    ordered = [spans[i][1] - spans[i][0] for i in range(args.samples) if i in spans]
    ideal = ideal_schedule(ordered, args.concurrency)
    growth = 100.0 * (figures["end_rss"] - figures["half_rss"]) / figures["half_rss"]
    others = max(0.0, figures["machine_cpu"] - figures["own_cpu"])
    print(f"{args.samples} samples at concurrency {args.concurrency}, {len(stats['log'])} requests, faults injected: "
          f"{dict(stats['faults'])}; error rows: {figures['errors']}; wall {figures['wall']:.1f} s, ideal {ideal:.1f} s; "
          f"this process's CPU {figures['own_cpu']:.1f} s; other processes' CPU meanwhile {others:.1f} s on "
          f"{os.cpu_count()} cores; load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}",
          file=sys.stderr)
    print(f"peak RSS MB: {figures['peak']:.1f}")
    print(f"RSS growth over the last half %: {growth:.1f}")
    print(f"rows lost or repeated: {figures['lost_or_repeated']}")
    print(f"wall / ideal: {figures['wall'] / ideal:.3f}")


if __name__ == "__main__":
    main()
