"""Throughput of batch runs, one process and on Ray workers, and how much of each prompt a model
server's prefix cache can reuse.

A loopback OpenAI-compatible server (asyncio HTTP/1.1 in a child process, so its CPU time is not
counted) answers every request after a delay, with no limit on parallel requests. Answers follow
the JSON schema of the request (``response_format``) or are scripted per role, so every
configuration parses them. The framework runs through the real path: a run session, BatchRunner (or
RayBatchRunner), AutoGen agents and the backend's default HTTP client, with the
response cache off. Each figure is the best of ``--repeat`` runs (default 3), as timeit does: other
jobs on a shared machine only ever add time.

Sections (``--only cpu,realistic,prefix``; all by default):

cpu
  The CPU-bound regime: a 50 ms server, ``--samples 128`` samples of ``--config async`` at
  ``--concurrency 64``. Ideal time = ceil(samples / concurrency) x depth x delay, where depth (the
  model calls on one sample's critical path) is measured by the server while one sample runs alone.
  Measured in one process, then on a local Ray cluster with one worker and with ``--workers 2``
  (wall time from the first sample sent to the last row written, so the workers' start is not
  counted). Prints ``speedup 2 workers: X`` (one worker's wall over two workers'; target >= 1.7),
  the two-worker ratio to the ideal (target <= 1.15), the one-process ratio beside the bare client's,
  and the framework's own CPU per model call: one process's CPU per call minus a bare aiohttp
  client's sending the same bodies (``framework CPU per model call: X ms``, target <= 1 ms), and the
  one over the other (``framework / bare client CPU per call: R``, target <= 3.5). ``--one-process``
  leaves out the Ray runs (``scripts/test.sh`` runs it short, so CI's log shows the two lines).

profile (``--profile``)
  The CPU section's one-process run recorded by py-spy (``--profile-runs`` runs, ``--profile-rate``
  samples a second), and its ten largest areas (AutoGen's runtime, pydantic, asyncio, aiohttp, the
  garbage collector, redaction, the request body, the ledger ...; ``benchmarks/cpu_areas.py`` says
  how a sample finds its area), each as a share and in milliseconds of CPU per call.

realistic
  A server whose latency is lognormal (median 1 s, 95th percentile 3 s), ``--realistic-samples
  1000`` samples at ``--realistic-concurrency 256``. The ideal is computed from what the server
  measured: each sample's model time (the union of its requests' intervals), scheduled in order
  on ``concurrency`` slots with no overhead. Prints ``realistic ratio: X`` (target <= 1.05).

prefix
  The share of prompt tokens of each call that repeat a prefix of an earlier call of the same
  sample: what vLLM's automatic prefix caching can skip. Measured on ``async`` and ``agentm3d``
  for a post with an image and three pieces of evidence on a vision backend, with answers of
  realistic length (and, for reference, a text-only post with no evidence). Images count as
  ceil(w/32) x ceil(h/32) tokens (Qwen3-VL: 16-pixel patches merged 2 x 2); text is counted with
  the packaged Gemma 3 tokenizer. Prints ``prefix reuse async: X%`` and ``prefix reuse agentm3d:
  X%`` (target >= 70%).

prefix, against a real vLLM server (``--vllm-url``)
  The same posts through ``async`` and ``agentm3d`` sent to a running vLLM server instead, with the
  estimate above computed on the request bodies actually sent, and beside it the share that vLLM's
  own prefix cache reused, from its counters in ``/metrics`` (``vllm:prefix_cache_hits_total`` over
  ``vllm:prefix_cache_queries_total``, read before and after each configuration). Prints
  ``prefix reuse (vLLM counters) async: X%`` and ``prefix reuse (vLLM counters) agentm3d: X%``. The
  counters differ from the estimate by construction: vLLM reuses whole KV blocks only (128 tokens on
  the CPU build, 16 on GPUs), it counts reuse across samples as well (a shared system prompt, the same
  picture), and its tokenizer and image processor are the served model's own. The tiny test model
  serves for trying it without a GPU (``python -m tests.support.vllm_server`` starts it).

Every section prints the machine's load average and how much CPU other processes took meanwhile.

    python benchmarks/throughput.py [--only cpu,realistic,prefix] [--workers 2] [--repeat 3]
    python benchmarks/throughput.py --profile
    python benchmarks/throughput.py --only cpu --one-process
    python benchmarks/throughput.py --only prefix --vllm-url http://127.0.0.1:8011/v1
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import contextlib
import heapq
import io
import json
import math
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Awaitable, Callable, Iterator

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


# ---- the server (child process) -------------------------------------------------------------

def instance_of(schema: dict[str, Any], defs: dict[str, Any], pick: int = 0, text: str = "benchmark answer") -> Any:
    """A small valid instance of a JSON schema: the ``pick``-th enum value, the middle of a number range, ..."""
    if "$ref" in schema:
        return instance_of(defs[schema["$ref"].split("/")[-1]], defs, pick, text)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return instance_of(schema[key][0], defs, pick, text)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][pick % len(schema["enum"])]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "object":
        return {name: instance_of(sub, defs, pick, text) for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        return [instance_of(schema["items"], defs, pick, text) for _ in range(schema.get("minItems", 0))] if "items" in schema else []
    if kind in ("number", "integer"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        high = schema.get("maximum", schema.get("exclusiveMaximum", low + 1))
        middle = (low + high) / 2
        return int(middle) if kind == "integer" else middle
    if kind == "boolean":
        return True
    return text[: schema.get("maxLength", len(text))]


POST_KEY = re.compile(rb"Benchmark post \d+")

REASONING = ("The caption names a place and an event that the photo could show, and the quoted reports describe "
             "flooding in the same district on the same evening. The lighting and the water line look consistent "
             "across the frame, and nothing in the picture contradicts the stated time. One report doubts the "
             "location, but it gives no source, so I weigh it less than the two that agree.")
"""A realistic answer body (about 70 words) for the prefix section: the debate so far then has the
length it has with a real model, not a few words."""


def scripted_answer(request: dict[str, Any], raw: bytes, seen: dict[bytes, int], long: bool, count: int) -> str:
    """An answer in the requested schema or the role's scripted format.

    The k-th request about one post, whoever sends it, picks the k-th label: consecutive turns
    alternate, so the three seats of ``async`` never all agree and every debate runs its three
    rounds. A modality agent's candidate finds a distortion when its seed is a multiple of 5 (one
    candidate in five), graders score those lower, so best-of-N turns are scored and the cascade
    runs to its end.
    """
    found = POST_KEY.search(raw)
    post = found.group(0) if found else raw[:200]
    pick = seen.get(post, 0)
    seen[post] = pick + 1
    body = f"Answer {count}. {REASONING}" if long else "benchmark answer"
    form = request.get("response_format") or {}
    schema = (form.get("json_schema") or {}).get("schema") or form.get("schema")
    if schema:
        return json.dumps(instance_of(schema, schema.get("$defs", {}), pick, body))
    messages = request.get("messages", [])
    system = " ".join(str(m.get("content")) for m in messages if m.get("role") == "system")
    last = messages[-1] if messages else {}
    last_text = json.dumps(last.get("content"))
    if "SCORE: <" in last_text:
        judged = json.dumps(messages[-2].get("content")) if len(messages) > 1 else ""
        return "SCORE: 0.3" if re.search(r"REFUTE\]|MISMATCH\]", judged) else "SCORE: 0.9"
    if "The score is <" in system:
        return "The score is 3" if re.search(r"REFUTE\]|MISMATCH\]", last_text) else "The score is 8"
    if "Reply with the score alone" in system:
        return "0.2" if re.search(r"REFUTE\]|MISMATCH\]", last_text) else "0.8"
    if "[BON level-1]" in system:
        return "A specific claim about a breaking event, with a photo that could come from elsewhere. [BON level-1]"
    actions = re.search(r"Finish\[([A-Z ]+)\] if .*?, or Finish\[([A-Z ]+)\] if", system, re.S)
    if actions:
        distorted = int(request.get("seed") or 0) % 5 == 0
        return f"{body}\nFinish[{actions.group(1) if distorted else actions.group(2)}]\nCONFIDENCE: 0.8"
    prompt = " ".join(str(m.get("content")) for m in messages)
    offered = re.search(r"one of: ([^>\n]+)>", prompt)
    if offered:
        labels = [label.strip() for label in offered.group(1).split(",")]
        return f"{body}\nFINAL ANSWER: {labels[pick % len(labels)]}\nCONFIDENCE: 0.7"
    return "yes"


def sequential_depth(intervals: list[tuple[float, float]]) -> int:
    """How many requests ran one after another: the most requests of which none overlaps another.

    Calls made in parallel overlap and count once; calls that wait for each other do not.
    """
    depth, free_at = 0, float("-inf")
    for start, end in sorted(intervals, key=lambda interval: interval[1]):
        if start >= free_at:
            depth, free_at = depth + 1, end
    return depth


def union_length(intervals: list[tuple[float, float]]) -> float:
    """The time covered by some interval: a sample's model time when its parallel calls overlap."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted(intervals):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total


class Latency:
    """A fixed delay, or a lognormal one given its median and 95th percentile (seeded)."""

    def __init__(self, delay: float, median: float | None, p95: float | None, seed: int = 0) -> None:
        self.delay = delay
        self.random = random.Random(seed)
        self.mu = math.log(median) if median else 0.0
        self.sigma = math.log(p95 / median) / 1.6448536 if median and p95 else 0.0

    def __call__(self) -> float:
        return self.random.lognormvariate(self.mu, self.sigma) if self.sigma else self.delay


class ModelServer(asyncio.Protocol):
    """HTTP/1.1 with keep-alive, parsed by hand and answered from a timer, not a coroutine per request:
    the server's own CPU per request must stay far below the client's, or it would slow what it measures."""

    def __init__(self, latency: Latency, shared: dict[str, Any]) -> None:
        self.latency = latency
        self.shared = shared
        self.buffer = b""
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while True:
            head_end = self.buffer.find(b"\r\n\r\n")
            if head_end < 0:
                return
            head = self.buffer[:head_end].decode("latin-1")
            length = 0
            for line in head.split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            if len(self.buffer) < head_end + 4 + length:
                return
            body = self.buffer[head_end + 4: head_end + 4 + length]
            self.buffer = self.buffer[head_end + 4 + length:]
            self.handle(head.split(" ", 2), body)

    def handle(self, request_line: list[str], body: bytes) -> None:
        stats, intervals = self.shared["stats"], self.shared["intervals"]
        path = request_line[1]
        if path.endswith("/stats"):
            stats["cpu_s"] = time.process_time()
            self.send(stats)
        elif path.endswith("/reset"):
            intervals.clear()
            self.shared["per_post"].clear()
            stats["max_in_flight"] = 0
            self.send({})
        elif path.endswith("/depth"):
            self.send({"depth": sequential_depth(intervals)})
        elif path.endswith("/model_time"):
            self.send({post.decode(): union_length(spans) for post, spans in self.shared["per_post"].items()})
        elif request_line[0] == "GET":
            self.send({"object": "list", "data": [{"id": "bench-model", "object": "model"}]})
        else:
            request = json.loads(body)
            stats["requests"] += 1
            stats["in_flight"] += 1
            stats["max_in_flight"] = max(stats["max_in_flight"], stats["in_flight"])
            text = scripted_answer(request, body, self.shared["seen"], self.shared["long"], stats["requests"])
            found = POST_KEY.search(body)
            started = time.monotonic()
            asyncio.get_running_loop().call_later(self.latency(), self.answer, request, text, started,
                                                  found.group(0) if found else b"")

    def answer(self, request: dict[str, Any], text: str, started: float, post: bytes) -> None:
        stats = self.shared["stats"]
        span = (started, time.monotonic())
        self.shared["intervals"].append(span)
        self.shared["per_post"].setdefault(post, []).append(span)
        stats["in_flight"] -= 1
        self.send({
            "id": "chatcmpl-bench", "object": "chat.completion", "created": int(time.time()),
            "model": request.get("model", "bench-model"),
            "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
        })

    def send(self, payload: dict[str, Any]) -> None:
        if self.transport is None or self.transport.is_closing():
            return
        data = json.dumps(payload).encode()
        self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(data)).encode() + b"\r\n\r\n" + data)


async def serve(latency: Latency, long: bool) -> None:
    shared: dict[str, Any] = {"stats": {"requests": 0, "in_flight": 0, "max_in_flight": 0}, "intervals": [],
                              "per_post": {}, "seen": {}, "long": long}
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: ModelServer(latency, shared), "127.0.0.1", 0, backlog=4096)
    sys.stdout.write(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1\n")
    sys.stdout.flush()
    async with server:
        await server.serve_forever()


class Server:
    """The model server in a child process, for one section."""

    def __init__(self, *options: str) -> None:
        self.process = subprocess.Popen([sys.executable, __file__, "--serve", *options], stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        self.url = self.process.stdout.readline().strip()

    def get(self, path: str) -> Any:
        import httpx

        return httpx.get(self.url + path, timeout=30).json()

    def close(self) -> None:
        self.process.kill()
        self.process.wait()


# ---- the machine ------------------------------------------------------------------------------

def _cpu_jiffies() -> tuple[float, float]:
    """(busy, total) CPU time of the whole machine so far, from /proc/stat."""
    fields = [float(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0.0)
    return sum(fields[:8]) - idle, sum(fields[:8])


def _own_cpu() -> float:
    """CPU seconds of this process and every process it started (the server, Ray), from /proc."""
    ticks = os.sysconf("SC_CLK_TCK")
    children: dict[int, list[int]] = {}
    stats: dict[int, list[str]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            stats[int(entry.name)] = fields
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    total, stack = 0.0, [os.getpid()]
    while stack:
        pid = stack.pop()
        if pid in stats:
            fields = stats[pid]
            total += (int(fields[11]) + int(fields[12])) / ticks
        stack.extend(children.get(pid, []))
    return total


class Machine:
    """What else the machine did during a section: load average and other processes' CPU."""

    def __enter__(self) -> "Machine":
        self.busy, self.total = _cpu_jiffies()
        self.own = _own_cpu()
        self.wall = time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        busy, total = _cpu_jiffies()
        ticks = os.sysconf("SC_CLK_TCK")
        cores = os.cpu_count() or 1
        wall = time.perf_counter() - self.wall
        machine_busy = (busy - self.busy) / ticks
        own = _own_cpu() - self.own
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"  machine: {cores} cores, load average {load}; over this section's {wall:.0f} s the cores were "
              f"{machine_busy / (wall * cores) * 100:.0f}% busy, {max(0.0, machine_busy - own) / wall:.2f} cores of it "
              f"by other processes than this benchmark")


# ---- the client (this process) --------------------------------------------------------------

def bench_pool(url: str, vision: bool = False, model: str = "bench-model", transport_retries: int = 0) -> Any:
    from m3d_agents.backends.config import BackendConfig, BackendSettings
    from m3d_agents.backends.factory import BackendPool

    backend = BackendConfig(kind="vllm", base_url=url, model=model, cache=False, vision=vision,
                            concurrency=4096, transport_retries=transport_retries, timeout_s=120)
    return BackendPool(BackendSettings(backend="bench", backends={"bench": backend}))


def bench_posts(count: int) -> list[Any]:
    from m3d_agents.sample import Sample

    return [Sample(id=f"bench-{i:04d}", text=f"Benchmark post {i}: flooding reported downtown, photo attached.",
                   gold_label="fake" if i % 2 else "real") for i in range(count)]


MANIFEST = dict(dataset="benchmark", backend="bench", seed=0, taxonomy="binary")


async def batch(config: str, items: list[Any], pool: Any, out: Path, concurrency: int, **ray: Any) -> dict[str, Any]:
    """One run: wall time and CPU of this process (and, on Ray, of the workers), and the model calls."""
    from debates.eval.run.batch import BatchRunner
    from debates.eval.records import RunManifest
    from debates.eval.run.ray_runner import RayBatchRunner, RayOutcome
    from debates.session import RunSession

    kind = RayBatchRunner if ray else BatchRunner
    async with RunSession(config, pool, backend="bench") as session:
        runner = kind(config, items, session, out, RunManifest(config=config, **MANIFEST), concurrency=concurrency, **ray)
        cpu, wall = time.process_time(), time.perf_counter()
        outcome = await runner.run()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    failed = [r for r in outcome.rows if r.status == "error"]
    if failed:
        raise SystemExit(f"{len(failed)} samples failed, e.g. {failed[0].error}")
    figures = {"wall": wall, "cpu": cpu, "calls": sum(r.model_calls for r in outcome.rows)}
    if isinstance(outcome, RayOutcome):
        figures["wall"] = outcome.dispatch_wall_s
        figures.update({f"cpu_{k}": v for k, v in outcome.cpu_s.items()})
    return figures


def best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Per figure, the best (smallest) of the runs."""
    return {key: min(run[key] for run in runs) for key in runs[0]}


async def record_bodies(run: Awaitable[Any]) -> tuple[Any, list[bytes]]:
    """Await ``run`` (not started yet) while keeping every request body the lean HTTP client sends."""
    from m3d_agents.backends.transports.lean_http import OpenAICompatibleClient

    sent: list[bytes] = []
    post = OpenAICompatibleClient._post

    async def recording(self: OpenAICompatibleClient, payload: bytes) -> Any:
        sent.append(payload)
        return await post(self, payload)

    OpenAICompatibleClient._post = recording  # type: ignore[method-assign]
    try:
        return await run, sent
    finally:
        OpenAICompatibleClient._post = post  # type: ignore[method-assign]


async def bare_client(url: str, bodies: list[bytes], calls: int, concurrency: int) -> tuple[float, float]:
    """The recorded bodies replayed ``calls`` times through bare aiohttp: the floor of any framework on it."""
    import aiohttp

    semaphore = asyncio.Semaphore(concurrency)
    session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
    headers = {"Content-Type": "application/json", "Authorization": "Bearer EMPTY"}

    async def one(i: int) -> None:
        async with semaphore:
            async with session.post(url + "/chat/completions", data=bodies[i % len(bodies)], headers=headers) as response:
                json.loads(await response.read())

    await asyncio.gather(*[one(i) for i in range(concurrency)])
    cpu, wall = time.process_time(), time.perf_counter()
    await asyncio.gather(*[one(i) for i in range(calls)])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    await session.close()
    return wall, cpu


def start_ray(workers: int) -> None:
    import logging

    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    logging.getLogger("ray").setLevel(logging.ERROR)
    if not ray.is_initialized():
        ray.init(num_cpus=max(workers, 1), include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR,
                 runtime_env={"env_vars": {"PYTHONPATH": str(REPO)}})


async def cpu_regime(args: argparse.Namespace, workdir: Path) -> None:
    server = Server("--delay", str(args.delay))
    pool = bench_pool(server.url)
    posts = bench_posts(args.samples)
    try:
        await batch(args.config, posts[:2], pool, workdir / "warmup", 2)
        server.get("/reset")
        probe, bodies = await record_bodies(batch(args.config, bench_posts(1), pool, workdir / "probe", 1))
        depth = int(server.get("/depth")["depth"])
        ideal = math.ceil(args.samples / args.concurrency) * depth * args.delay
        print(f"CPU-bound regime: config {args.config}, {args.samples} samples at concurrency {args.concurrency} in all, "
              f"server delay {args.delay * 1000:.0f} ms; {probe['calls']} calls per sample, depth {depth}; "
              f"ideal {ideal:.3f} s = ceil({args.samples} / {args.concurrency}) x {depth} x {args.delay * 1000:.0f} ms")
        with Machine():
            local = best([await batch(args.config, posts, pool, workdir / f"local-{i}", args.concurrency)
                          for i in range(args.repeat)])
            bare = [await bare_client(server.url, bodies, int(local["calls"]), args.concurrency) for _ in range(args.repeat)]
            local_cpu = local["cpu"] / local["calls"] * 1000
            bare_cpu = min(c for _, c in bare) / local["calls"] * 1000
            bare_wall = min(w for w, _ in bare)
            own = local_cpu - bare_cpu
            print(f"  one process:     wall {local['wall']:.3f} s, ratio {local['wall'] / ideal:.3f}, "
                  f"CPU {local_cpu:.2f} ms per call "
                  f"(bare aiohttp sending the same bodies at the same concurrency: {bare_cpu:.2f} ms, wall "
                  f"{bare_wall:.3f} s, ratio {bare_wall / ideal:.3f})")
            on_ray: dict[int, dict[str, Any]] = {}
            if not args.one_process:
                start_ray(args.workers)
                for count in sorted({1, args.workers}):
                    on_ray[count] = best([await batch(args.config, posts, pool, workdir / f"ray{count}-{i}",
                                                      args.concurrency, workers=count) for i in range(args.repeat)])
                    figures = on_ray[count]
                    per_call = {k: figures[f"cpu_{k}"] / figures["calls"] * 1000 for k in ("workers", "driver", "broker")}
                    print(f"  Ray, {count} worker{'s' if count > 1 else ' '}:  wall {figures['wall']:.3f} s, ratio "
                          f"{figures['wall'] / ideal:.3f}, CPU per call: workers {per_call['workers']:.2f} ms, driver "
                          f"{per_call['driver']:.2f} ms, permit broker {per_call['broker']:.3f} ms")
        if on_ray:
            two = on_ray[args.workers]
            speedup = on_ray[1]["wall"] / two["wall"]
            ratio = two["wall"] / ideal
            print(f"speedup {args.workers} workers: {speedup:.2f} (target >= 1.7) {'OK' if speedup >= 1.7 else 'MISSED'}")
            print(f"ratio {args.workers} workers: {ratio:.3f} (target <= 1.15) {'OK' if ratio <= 1.15 else 'MISSED'}")
        print(f"CPU-bound ratio, one process: {local['wall'] / ideal:.3f} (bare aiohttp client: {bare_wall / ideal:.3f})")
        print(f"framework CPU per model call: {own:.2f} ms (one process, beyond the bare client; target <= 1 ms) "
              f"{'OK' if own <= 1 else 'MISSED'}")
        relative = local_cpu / bare_cpu
        print(f"framework / bare client CPU per call: {relative:.2f} (one process's CPU per call over the bare client's; "
              f"target <= 3.5) {'OK' if relative <= 3.5 else 'MISSED'}")
    finally:
        await pool.close()
        server.close()


async def cpu_profile(args: argparse.Namespace, workdir: Path) -> None:
    """The CPU-bound regime's one-process run under py-spy: the largest areas of its CPU per call."""
    from benchmarks.cpu_areas import GC, CollectorClock, Recording, areas

    server = Server("--delay", str(args.delay))
    pool = bench_pool(server.url)
    posts = bench_posts(args.samples)
    try:
        await batch(args.config, posts[:2], pool, workdir / "warmup", 2)
        _, bodies = await record_bodies(batch(args.config, bench_posts(1), pool, workdir / "probe", 1))
        plain = []
        for i in range(args.repeat):
            with CollectorClock() as collector:
                figures = await batch(args.config, posts, pool, workdir / f"plain-{i}", args.concurrency)
            plain.append({**figures, "gc": collector.seconds})
        bare = min([(await bare_client(server.url, bodies, int(plain[0]["calls"]), args.concurrency))[1]
                    for _ in range(args.repeat)])
        recording = Recording(workdir / "profile.txt", args.profile_rate)
        recording.start()
        try:
            for i in range(args.profile_runs):
                await batch(args.config, posts, pool, workdir / f"profiled-{i}", args.concurrency)
        finally:
            counts = areas(recording.stop())
    finally:
        await pool.close()
        server.close()
    fastest = min(plain, key=lambda run: run["cpu"])
    per_call = fastest["cpu"] / fastest["calls"] * 1000
    collector_ms = fastest["gc"] / fastest["calls"] * 1000
    sampled = {area: count for area, count in counts.items() if area != GC}
    total = sum(sampled.values())
    ms = {area: count / max(1, total) * (per_call - collector_ms) for area, count in sampled.items()}
    ms[GC + " (timed by gc.callbacks)"] = collector_ms
    print(f"Profile of the CPU-bound regime in one process: config {args.config}, {args.samples} samples at concurrency "
          f"{args.concurrency}; CPU {per_call:.2f} ms per call (the fastest of {args.repeat} runs; bare aiohttp client: "
          f"{bare / fastest['calls'] * 1000:.2f} ms), {collector_ms:.3f} ms of it in the garbage collector; the rest by "
          f"{total} samples of py-spy at {args.profile_rate} Hz over {args.profile_runs} runs (native frames, the thread "
          f"holding the GIL; {counts[GC]} samples in the collector left out). Its ten largest areas:")
    ranked = sorted(ms.items(), key=lambda item: item[1], reverse=True)
    for rank, (area, value) in enumerate(ranked[:10], 1):
        print(f"  {rank:2d}. {area:<52} {value / per_call * 100:5.1f}%  {value:.3f} ms per call")
    rest = sum(value for _, value in ranked[10:])
    if rest:
        print(f"      the other {len(ranked) - 10} areas{'':<32} {rest / per_call * 100:5.1f}%  {rest:.3f} ms per call")


def ideal_schedule(durations: list[float], slots: int) -> float:
    """The makespan of running samples in order on ``slots`` slots, each taking its model time."""
    free = [0.0] * slots
    end = 0.0
    for duration in durations:
        start = heapq.heappop(free)
        heapq.heappush(free, start + duration)
        end = max(end, start + duration)
    return end


async def realistic_regime(args: argparse.Namespace, workdir: Path) -> None:
    server = Server("--median", str(args.median), "--p95", str(args.p95))
    pool = bench_pool(server.url)
    posts = bench_posts(args.realistic_samples)
    how = f"{args.realistic_workers} Ray workers" if args.realistic_workers else "one process"
    print(f"Realistic regime: config {args.config}, {args.realistic_samples} samples at concurrency "
          f"{args.realistic_concurrency}, lognormal latency (median {args.median:g} s, 95th percentile {args.p95:g} s), {how}")
    try:
        if args.realistic_workers:
            start_ray(args.realistic_workers)
        ray = {"workers": args.realistic_workers} if args.realistic_workers else {}
        ratios = []
        with Machine():
            for attempt in range(args.repeat):
                server.get("/reset")
                figures = await batch(args.config, posts, pool, workdir / f"realistic-{attempt}", args.realistic_concurrency, **ray)
                model_time = server.get("/model_time")
                durations = [model_time[f"Benchmark post {i}"] for i in range(len(posts))]
                ideal = ideal_schedule(durations, args.realistic_concurrency)
                ratios.append(figures["wall"] / ideal)
                print(f"  run {attempt + 1}: wall {figures['wall']:.2f} s, ideal {ideal:.2f} s (mean model time per "
                      f"sample {sum(durations) / len(durations):.2f} s, {figures['calls'] / len(posts):.1f} calls each), "
                      f"ratio {ratios[-1]:.3f}; CPU {figures['cpu'] / figures['calls'] * 1000:.2f} ms per call")
        ratio = min(ratios)
        print(f"realistic ratio: {ratio:.3f} (target <= 1.05) {'OK' if ratio <= 1.05 else 'MISSED'}")
    finally:
        await pool.close()
        server.close()


# ---- prefix reuse ---------------------------------------------------------------------------------

EVIDENCE = [
    ("reuters.com", "Floodwater filled streets in lower Manhattan on the evening the storm made landfall. Photographs "
     "from the area showed cars submerged along the waterfront and power cut to large parts of the district. The city "
     "said the surge exceeded earlier records and that tunnels had been closed as a precaution before the peak."),
    ("apnews.com", "Several images shared widely during the storm were later found to be composites or pictures of "
     "earlier events. A widely shared picture of a dark storm cloud over the Statue of Liberty combined a real photo "
     "of the statue with a separate image of a supercell taken in another state."),
    ("example-blog.net", "Readers sent in pictures of the harbour that night. Some showed the statue lit up under "
     "heavy skies, others the flooded promenade. We could not verify where each picture was taken, and several were "
     "posted without any date or author."),
]


def prefix_sample(index: int, with_media: bool, image: Path) -> tuple[Any, list[Any]]:
    from m3d_agents.evidence import Evidence
    from m3d_agents.sample import Sample

    if not with_media:
        return bench_posts(index + 1)[index], []
    sample = Sample(id=f"prefix-{index}", text=f"Benchmark post {index}: my favourite place in the world tonight "
                    "#nyc #hurricane #sandy #statueofliberty", images=[image])
    evidence = [Evidence(kind="web_page", url=f"https://{domain}/story-{index}", domain=domain, text=text)
                for domain, text in EVIDENCE]
    return sample, evidence


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """llama.cpp writes a context warning to file descriptor 2 even with verbose off."""
    saved = os.dup(2)
    with open(os.devnull, "w") as null:
        os.dup2(null.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


class Tokens:
    """Prompt tokens as a server sees them: a chat template's role markers, the text's tokens, and a
    block of tokens per image (identical images give identical tokens, as they do for a prefix cache)."""

    def __init__(self) -> None:
        try:
            from llama_cpp import Llama

            from m3d_agents.backends.local_server import packaged_model_path

            with quiet_stderr():
                model = Llama(model_path=str(packaged_model_path()), vocab_only=True, verbose=False)
            self.encode: Callable[[str], list[Any]] = lambda text: model.tokenize(text.encode(), add_bos=False, special=True)
            self.name = "the packaged Gemma 3 tokenizer"
        except Exception:  # noqa: BLE001 - the figure stays meaningful with a plain word splitter
            self.encode = lambda text: re.findall(r"\w+|[^\w\s]|\s+", text)
            self.name = "a word-and-punctuation splitter (llama-cpp-python or its model is not installed)"

    def image(self, url: str) -> list[Any]:
        from PIL import Image

        data = base64.b64decode(url.split(",", 1)[1])
        width, height = Image.open(io.BytesIO(data)).size
        key = hash(data)
        return [("image", key, k) for k in range(math.ceil(width / 32) * math.ceil(height / 32))]

    def of(self, body: bytes) -> list[Any]:
        tokens: list[Any] = []
        for message in json.loads(body)["messages"]:
            tokens += self.encode(f"<|im_start|>{message['role']}\n")
            content = message.get("content") or ""
            for part in [content] if isinstance(content, str) else content:
                if isinstance(part, str):
                    tokens += self.encode(part)
                elif part.get("type") == "text":
                    tokens += self.encode(part["text"])
                elif part.get("type") == "image_url":
                    tokens += self.image(part["image_url"]["url"])
            tokens += self.encode("<|im_end|>\n")
        return tokens + self.encode("<|im_start|>assistant\n")


def common_prefix(a: list[Any], b: list[Any]) -> int:
    n = min(len(a), len(b))
    i = 0
    while i < n and a[i] == b[i]:
        i += 1
    return i


def reuse_of(calls: list[list[Any]]) -> tuple[int, int]:
    """(tokens that repeat a prefix of an earlier call, all tokens) over the calls of one sample."""
    reused = total = 0
    for i, tokens in enumerate(calls):
        total += len(tokens)
        reused += max((common_prefix(tokens, earlier) for earlier in calls[:i]), default=0)
    return reused, total


async def prefix_reuse(args: argparse.Namespace) -> None:
    from debates.session import run_sample

    server = Server("--delay", "0", "--long-answers")
    tokens = Tokens()
    from PIL import Image

    width, height = Image.open(args.prefix_image).size
    print(f"Prefix reuse: {args.prefix_samples} posts per configuration, answers of about 70 words; tokens counted "
          f"with {tokens.name}, images as ceil(w/32) x ceil(h/32) tokens ({args.prefix_image.name}: {width} x {height})")
    try:
        for with_media in (True, False):
            for config in ("async", "agentm3d"):
                pool = bench_pool(server.url, vision=with_media)
                reused = total = calls = 0
                try:
                    for index in range(args.prefix_samples):
                        sample, evidence = prefix_sample(index, with_media, args.prefix_image)
                        _, bodies = await record_bodies(run_sample(config, sample, pool, backend="bench",
                                                                           evidence=evidence))
                        counted = [tokens.of(body) for body in bodies]
                        r, t = reuse_of(counted)
                        reused, total, calls = reused + r, total + t, calls + len(counted)
                finally:
                    await pool.close()
                share = reused / max(1, total) * 100
                if with_media:
                    print(f"prefix reuse {config}: {share:.1f}% (target >= 70%) {'OK' if share >= 70 else 'MISSED'}; "
                          f"{calls / args.prefix_samples:.1f} calls and {total / max(1, calls):.0f} prompt tokens per call, "
                          f"post with an image and 3 pieces of evidence")
                else:
                    print(f"  for reference, {config} on a text-only post with no evidence: {share:.1f}% "
                          f"({total / max(1, calls):.0f} prompt tokens per call)")
    finally:
        server.close()


def prefix_counters(base_url: str) -> tuple[float, float]:
    """(hits, queries) of vLLM's prefix cache so far, in tokens, summed over its engines."""
    import httpx

    root = base_url.rstrip("/").removesuffix("/v1")
    totals = {"vllm:prefix_cache_hits_total": 0.0, "vllm:prefix_cache_queries_total": 0.0}
    for line in httpx.get(root + "/metrics", timeout=30).text.splitlines():
        name = line.split("{", 1)[0]
        if name in totals:
            totals[name] += float(line.rsplit(" ", 1)[1])
    return totals["vllm:prefix_cache_hits_total"], totals["vllm:prefix_cache_queries_total"]


def served_model(base_url: str) -> str:
    import httpx

    models = httpx.get(base_url.rstrip("/") + "/models", timeout=30).json()
    return str(models["data"][0]["id"])


async def prefix_reuse_vllm(args: argparse.Namespace) -> None:
    """The prefix section against a real vLLM server: the estimate on the bodies sent, and vLLM's own counters."""
    from debates.session import run_sample

    model = args.vllm_model or served_model(args.vllm_url)
    tokens = Tokens()
    print(f"Prefix reuse against vLLM at {args.vllm_url} (model {model}): {args.prefix_samples} posts per configuration "
          f"with an image and 3 pieces of evidence; estimate with {tokens.name}")
    for config in ("async", "agentm3d"):
        pool = bench_pool(args.vllm_url, vision=True, model=model, transport_retries=3)
        reused = total = calls = 0
        hits_before, queries_before = prefix_counters(args.vllm_url)
        try:
            for index in range(args.prefix_samples):
                sample, evidence = prefix_sample(index, True, args.prefix_image)
                _, bodies = await record_bodies(run_sample(config, sample, pool, backend="bench", evidence=evidence))
                r, t = reuse_of([tokens.of(body) for body in bodies])
                reused, total, calls = reused + r, total + t, calls + len(bodies)
        finally:
            await pool.close()
        hits, queries = prefix_counters(args.vllm_url)
        hits, queries = hits - hits_before, queries - queries_before
        print(f"prefix reuse {config}: {reused / max(1, total) * 100:.1f}% (estimate on the {calls} request bodies sent)")
        print(f"prefix reuse (vLLM counters) {config}: {hits / max(1.0, queries) * 100:.1f}% "
              f"({hits:.0f} of {queries:.0f} prompt tokens served from vLLM's prefix cache)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", help="sections to run, comma-separated (default: cpu,realistic,prefix; with --profile, "
                                        "only the profile)")
    parser.add_argument("--config", default="async")
    parser.add_argument("--samples", type=int, default=128)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--one-process", action="store_true", help="the CPU section without its Ray runs")
    parser.add_argument("--profile", action="store_true",
                        help="profile the CPU section's one-process run with py-spy and print its ten largest areas")
    parser.add_argument("--profile-rate", type=int, default=250, help="py-spy's samples per second")
    parser.add_argument("--profile-runs", type=int, default=3, help="runs of the CPU section recorded by the profile")
    parser.add_argument("--realistic-samples", type=int, default=1000)
    parser.add_argument("--realistic-concurrency", type=int, default=256)
    parser.add_argument("--realistic-workers", type=int, default=0, help="run the realistic regime on this many Ray workers")
    parser.add_argument("--median", type=float, default=1.0)
    parser.add_argument("--p95", type=float, default=3.0)
    parser.add_argument("--prefix-samples", type=int, default=3)
    parser.add_argument("--prefix-image", type=Path, default=REPO / "examples" / "sandy_fake_29.jpg",
                        help="the image of the prefix section's post (default: the example post's, 306 x 306)")
    parser.add_argument("--repeat", type=int, default=3,
                        help="measure each figure this many times and keep the best, as timeit does: "
                             "other jobs on a shared machine only ever add time")
    parser.add_argument("--vllm-url", help="run the prefix section against this running vLLM server (its OpenAI base "
                                             "URL, e.g. http://127.0.0.1:8011/v1) and read its prefix-cache counters")
    parser.add_argument("--vllm-model", help="the model name to ask the vLLM server for (default: the first it serves)")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--long-answers", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        median = args.median if "--median" in sys.argv else None
        asyncio.run(serve(Latency(args.delay, median, args.p95 if median else None), args.long_answers))
        return

    from debates.config_loader import available_configs

    if args.config not in available_configs():
        raise SystemExit(f"configuration {args.config!r} is not available (available: {', '.join(available_configs())})")
    only = args.only if args.only is not None else ("" if args.profile else "cpu,realistic,prefix")
    sections = {s.strip() for s in only.split(",") if s.strip()}
    unknown = sections - {"cpu", "realistic", "prefix"}
    if unknown:
        raise SystemExit(f"unknown sections {sorted(unknown)}; choose from cpu, realistic, prefix")

    async def run_all() -> None:
        with tempfile.TemporaryDirectory() as tmp:
            if args.profile:
                await cpu_profile(args, Path(tmp))
            if "cpu" in sections:
                await cpu_regime(args, Path(tmp))
            if "realistic" in sections:
                await realistic_regime(args, Path(tmp))
        if "prefix" in sections:
            with Machine():
                await (prefix_reuse_vllm(args) if args.vllm_url else prefix_reuse(args))

    asyncio.run(run_all())


if __name__ == "__main__":
    main()
