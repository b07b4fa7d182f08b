"""Throughput of the batch runner against a model server that always takes 50 ms.

A loopback OpenAI-compatible server (asyncio HTTP/1.1 in a child process, so its CPU time is
not counted) answers every request after exactly ``--delay`` seconds, with no limit on parallel
requests. Answers follow the JSON schema of the request (``response_format``), so every
configuration parses them. The framework then runs ``--samples`` samples of ``--config`` at
``--concurrency`` through the real path: BatchRunner, run_sample, AutoGen agents and the
backend's default HTTP client, with the response cache off.

Printed figures:
  wall time; ideal time = (samples / concurrency) x depth x delay, where depth (the number of
  model calls on one sample's critical path) is measured by the server while one sample runs
  alone, as the most requests of that sample of which none overlaps another; their
  ratio (target <= 1.15); the CPU time of this process per model call; the same for the bare
  HTTP client sending the same request bodies directly (and, for reference, the bare OpenAI SDK);
  and the framework's own CPU per call, the difference from the bare client (target <= 2 ms).
  Each measurement is repeated (``--repeat``, default 3) and the best kept, as timeit does:
  other jobs on a shared machine only ever add time.

    python benchmarks/throughput.py [--config async] [--samples 64] [--concurrency 32]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


# ---- the server (child process) -------------------------------------------------------------

def instance_of(schema: dict[str, Any], defs: dict[str, Any], pick: int = 0) -> Any:
    """A small valid instance of a JSON schema: the ``pick``-th enum value, the middle of a number range, ..."""
    if "$ref" in schema:
        return instance_of(defs[schema["$ref"].split("/")[-1]], defs, pick)
    for key in ("anyOf", "oneOf", "allOf"):
        if key in schema:
            return instance_of(schema[key][0], defs, pick)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][pick % len(schema["enum"])]
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = kind[0]
    if kind == "object":
        return {name: instance_of(sub, defs, pick) for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        return [instance_of(schema["items"], defs, pick) for _ in range(schema.get("minItems", 0))] if "items" in schema else []
    if kind in ("number", "integer"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        high = schema.get("maximum", schema.get("exclusiveMaximum", low + 1))
        middle = (low + high) / 2
        return int(middle) if kind == "integer" else middle
    if kind == "boolean":
        return True
    return "benchmark answer"


POST_KEY = re.compile(rb"Benchmark post \d+")


def answer_text(request: dict[str, Any], raw: bytes, seen: dict[bytes, int]) -> str:
    """An answer in the requested schema. The k-th request about one post, whoever sends it, picks
    the k-th label: consecutive turns alternate, so the three seats of ``async`` never all agree
    and every debate runs its three rounds."""
    form = request.get("response_format") or {}
    schema = (form.get("json_schema") or {}).get("schema") or form.get("schema")
    found = POST_KEY.search(raw)
    post = found.group(0) if found else raw[:200]
    pick = seen.get(post, 0)
    seen[post] = pick + 1
    if schema:
        return json.dumps(instance_of(schema, schema.get("$defs", {}), pick))
    prompt = " ".join(str(m.get("content")) for m in request.get("messages", []))
    offered = re.search(r"one of: ([^>\n]+)>", prompt)
    if offered:
        labels = [label.strip() for label in offered.group(1).split(",")]
        return f"The post is weighed against what is known.\nFINAL ANSWER: {labels[pick % len(labels)]}\nCONFIDENCE: 0.7"
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


class ModelServer(asyncio.Protocol):
    """HTTP/1.1 with keep-alive, parsed by hand and answered from a timer, not a coroutine per request:
    the server's own CPU per request must stay far below the client's, or it would slow what it measures."""

    def __init__(self, delay: float, shared: dict[str, Any]) -> None:
        self.delay = delay
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
            self.send({})
        elif path.endswith("/depth"):
            self.send({"depth": sequential_depth(intervals)})
        elif request_line[0] == "GET":
            self.send({"object": "list", "data": [{"id": "bench-model", "object": "model"}]})
        else:
            request = json.loads(body)
            stats["requests"] += 1
            stats["in_flight"] += 1
            stats["max_in_flight"] = max(stats["max_in_flight"], stats["in_flight"])
            text = answer_text(request, body, self.shared["seen"])
            started = time.monotonic()
            asyncio.get_running_loop().call_later(self.delay, self.answer, request, text, started)

    def answer(self, request: dict[str, Any], text: str, started: float) -> None:
        stats = self.shared["stats"]
        self.shared["intervals"].append((started, time.monotonic()))
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


async def serve(delay: float) -> None:
    shared: dict[str, Any] = {"stats": {"requests": 0, "in_flight": 0, "max_in_flight": 0}, "intervals": [], "seen": {}}
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: ModelServer(delay, shared), "127.0.0.1", 0, backlog=4096)
    sys.stdout.write(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1\n")
    sys.stdout.flush()
    async with server:
        await server.serve_forever()


# ---- the client (this process) --------------------------------------------------------------

async def run(config: str, samples: int, concurrency: int, repeat: int, base_url: str, workdir: Path,
              profile: Path | None = None) -> dict[str, float]:
    from debates.eval.batch import BatchRunner, RunManifest
    from m3d_agents.backends.config import BackendConfig, BackendSettings
    from m3d_agents.backends.factory import BackendPool
    from m3d_agents.sample import Sample

    backend = BackendConfig(kind="vllm", base_url=base_url, model="bench-model", cache=False, vision=False,
                            concurrency=4096, max_retries=0, timeout_s=60)
    pool = BackendPool(BackendSettings(backend="bench", backends={"bench": backend}))
    posts = [Sample(id=f"bench-{i:03d}", text=f"Benchmark post {i}: flooding reported downtown, photo attached.",
                    gold_label="fake" if i % 2 else "real") for i in range(samples)]
    manifest = dict(config=config, dataset="benchmark", backend="bench", seed=0, taxonomy="binary")

    async def batch(items: list[Any], name: str, k: int) -> tuple[float, float, int]:
        runner = BatchRunner(config, items, pool, workdir / name, RunManifest(**manifest), concurrency=k, backend="bench")
        cpu, wall = time.process_time(), time.perf_counter()
        outcome = await runner.run()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        failed = [r for r in outcome.rows if r.status == "error"]
        if failed:
            raise SystemExit(f"{len(failed)} samples failed, e.g. {failed[0].error}")
        return wall, cpu, sum(r.model_calls for r in outcome.rows)

    sent: list[bytes] = []

    async def bare(calls: int, how: str) -> tuple[float, float]:
        """The probe's request bodies, replayed ``calls`` times straight through a bare HTTP client:
        the floor that no framework on that client goes below."""
        import aiohttp
        from openai import AsyncOpenAI

        semaphore = asyncio.Semaphore(concurrency)
        session = aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=0))
        sdk = AsyncOpenAI(base_url=base_url, api_key="EMPTY", max_retries=0)
        headers = {"Content-Type": "application/json", "Authorization": "Bearer EMPTY"}

        async def one(i: int) -> None:
            body = sent[i % len(sent)]
            async with semaphore:
                if how == "sdk":
                    await sdk.chat.completions.create(**json.loads(body))
                else:
                    async with session.post(base_url + "/chat/completions", data=body, headers=headers) as response:
                        json.loads(await response.read())

        await asyncio.gather(*[one(i) for i in range(concurrency)])
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.gather(*[one(i) for i in range(calls)])
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        await session.close()
        await sdk.close()
        return wall, cpu

    try:
        await batch(posts[:2], "warmup", 2)
        import httpx

        httpx.get(base_url + "/reset", timeout=5)
        from m3d_agents.backends.transports.lean_http import OpenAICompatibleClient

        post = OpenAICompatibleClient._post

        async def recording(self: OpenAICompatibleClient, payload: bytes) -> Any:
            sent.append(payload)
            return await post(self, payload)

        OpenAICompatibleClient._post = recording  # type: ignore[method-assign]
        try:
            probe_wall, _, probe_calls = await batch([Sample(id="probe", text=posts[0].text, gold_label="real")], "probe", 1)
        finally:
            OpenAICompatibleClient._post = post  # type: ignore[method-assign]
        depth = int(httpx.get(base_url + "/depth", timeout=5).json()["depth"])
        profiler = None
        if profile is not None:
            import cProfile

            profiler = cProfile.Profile(time.process_time)
            profiler.enable()
        best: tuple[float, float, int] | None = None
        for attempt in range(repeat):
            measured = await batch(posts, f"run-{attempt}", concurrency)
            best = measured if best is None else (min(best[0], measured[0]), min(best[1], measured[1]), measured[2])
        assert best is not None
        wall, cpu, calls = best
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(str(profile))
        bare_runs = [await bare(calls, "aiohttp") for _ in range(repeat)]
        sdk_runs = [await bare(calls, "sdk") for _ in range(repeat)]
        bare_wall, bare_cpu = min(w for w, _ in bare_runs), min(c for _, c in bare_runs)
        sdk_wall, sdk_cpu = min(w for w, _ in sdk_runs), min(c for _, c in sdk_runs)
    finally:
        await pool.close()
    return {"depth": depth, "probe_wall": probe_wall, "probe_calls": probe_calls, "wall": wall, "cpu": cpu, "calls": calls,
            "bare_wall": bare_wall, "bare_cpu": bare_cpu, "sdk_wall": sdk_wall, "sdk_cpu": sdk_cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="async")
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--repeat", type=int, default=3,
                        help="measure the batch this many times and keep the best wall and CPU time, as timeit does: "
                             "other jobs on a shared machine only ever add time")
    parser.add_argument("--profile", type=Path, help="write cProfile stats of the measured batch here")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.delay))
        return

    from debates.strategy import available_configs

    if args.config not in available_configs():
        raise SystemExit(f"configuration {args.config!r} is not available yet (available: "
                         f"{', '.join(available_configs())}); run with --config check to measure the runner alone")
    server = subprocess.Popen([sys.executable, __file__, "--serve", "--delay", str(args.delay)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as tmp:
            figures = asyncio.run(run(args.config, args.samples, args.concurrency, args.repeat, base_url,
                                      Path(tmp), args.profile))
        import httpx

        stats = httpx.get(base_url + "/stats", timeout=5).json()
    finally:
        server.kill()
        server.wait()
    depth = int(figures["depth"])
    ideal = math.ceil(args.samples / args.concurrency) * depth * args.delay
    ratio = figures["wall"] / ideal
    cpu_per_call_ms = figures["cpu"] / figures["calls"] * 1000
    print(f"config {args.config}: {args.samples} samples at concurrency {args.concurrency}, server delay "
          f"{args.delay * 1000:.0f} ms")
    print(f"model calls: {figures['calls']} ({figures['calls'] / args.samples:.1f} per sample), "
          f"depth of sequential calls: {depth} (one sample alone took {figures['probe_wall'] * 1000:.0f} ms), "
          f"server saw at most {stats['max_in_flight']} requests in flight")
    print(f"wall time:  {figures['wall']:.3f} s (best of {args.repeat})")
    print(f"ideal time: {ideal:.3f} s = ({args.samples} / {args.concurrency}) x {depth} x {args.delay * 1000:.0f} ms")
    print(f"ratio:      {ratio:.3f} (target <= 1.15) {'OK' if ratio <= 1.15 else 'MISSED'}")
    bare_ms = figures["bare_cpu"] / figures["calls"] * 1000
    sdk_ms = figures["sdk_cpu"] / figures["calls"] * 1000
    own_ms = cpu_per_call_ms - bare_ms
    print(f"CPU per model call, all of this process: {cpu_per_call_ms:.2f} ms")
    print(f"  of which the bare HTTP client (aiohttp sending the same bodies directly): {bare_ms:.2f} ms "
          f"(wall {figures['bare_wall']:.3f} s for the same calls at the same concurrency)")
    print(f"  for reference, the bare OpenAI SDK sending them: {sdk_ms:.2f} ms per call (wall {figures['sdk_wall']:.3f} s)")
    print(f"framework's own CPU per model call: {own_ms:.2f} ms (target <= 2 ms) {'OK' if own_ms <= 2 else 'MISSED'}")
    print(f"model server's CPU over the whole benchmark: {stats['cpu_s']:.2f} s for {stats['requests']} requests "
          f"({stats['cpu_s'] / max(1, stats['requests']) * 1000:.2f} ms each; it runs in its own process)")


if __name__ == "__main__":
    main()
