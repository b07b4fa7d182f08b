"""Throughput of the batch runner against a model server that always takes 50 ms.

A loopback OpenAI-compatible server (a raw asyncio HTTP/1.1 server in a child process, so its
CPU time is not counted) answers every request after exactly ``--delay`` seconds, with no limit
on parallel requests. Answers follow the JSON schema of the request (``response_format``), so
every configuration parses them. The framework then runs ``--samples`` samples of ``--config``
at ``--concurrency`` through the real path: BatchRunner, run_sample, AutoGen agents,
OpenAIChatCompletionClient and httpx, with the response cache off.

Printed figures:
  wall time; ideal time = (samples / concurrency) x depth x delay, where depth (the number of
  model calls on one sample's critical path) is measured by the server while one sample runs
  alone, as the most requests of that sample of which none overlaps another; their
  ratio (target <= 1.15); the CPU time of this process per model call; the same for the bare
  OpenAI SDK making the same number of calls directly; and the framework's own CPU per call,
  their difference (target <= 2 ms).

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
import zlib
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


def answer_text(request: dict[str, Any], seen: dict[int, int]) -> str:
    """An answer in the requested schema. The k-th request about one post picks the k-th label, so
    consecutive turns alternate, the seats of a round never all agree, and a debate runs every round."""
    form = request.get("response_format") or {}
    schema = (form.get("json_schema") or {}).get("schema") or form.get("schema")
    user = next((m.get("content") for m in request.get("messages", []) if m.get("role") == "user"), "")
    post = zlib.crc32(json.dumps(user)[:300].encode())
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


async def serve(delay: float) -> None:
    stats: dict[str, Any] = {"requests": 0, "in_flight": 0, "max_in_flight": 0}
    intervals: list[tuple[float, float]] = []
    seen: dict[int, int] = {}

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                request_line, *header_lines = head.decode("latin-1").split("\r\n")
                headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in header_lines if h)}
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                path = request_line.split(" ")[1]
                if path.endswith("/stats"):
                    payload: dict[str, Any] = stats
                elif path.endswith("/reset"):
                    intervals.clear()
                    payload = {}
                elif path.endswith("/depth"):
                    payload = {"depth": sequential_depth(intervals)}
                elif request_line.startswith("GET"):
                    payload = {"object": "list", "data": [{"id": "bench-model", "object": "model"}]}
                else:
                    request = json.loads(body)
                    stats["requests"] += 1
                    stats["in_flight"] += 1
                    stats["max_in_flight"] = max(stats["max_in_flight"], stats["in_flight"])
                    started = time.monotonic()
                    await asyncio.sleep(delay)
                    intervals.append((started, time.monotonic()))
                    stats["in_flight"] -= 1
                    payload = {
                        "id": "chatcmpl-bench", "object": "chat.completion", "created": int(time.time()),
                        "model": request.get("model", "bench-model"),
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": answer_text(request, seen)}}],
                        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
                    }
                data = json.dumps(payload).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                             + str(len(data)).encode() + b"\r\n\r\n" + data)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=4096)
    sys.stdout.write(f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1\n")
    sys.stdout.flush()
    async with server:
        await server.serve_forever()


# ---- the client (this process) --------------------------------------------------------------

async def run(config: str, samples: int, concurrency: int, base_url: str, workdir: Path,
              profile: Path | None = None) -> dict[str, float]:
    from debates.evaluation.batch import BatchRunner, RunManifest
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

    async def bare_client(calls: int) -> tuple[float, float]:
        """The same number of requests straight through the OpenAI SDK: the floor no framework goes below."""
        from openai import AsyncOpenAI

        from m3d_agents.agents.checker import answer_schema
        from m3d_agents.labels import get_taxonomy

        client = AsyncOpenAI(base_url=base_url, api_key="EMPTY", max_retries=0)
        schema = answer_schema(get_taxonomy("binary")).model_json_schema()
        form = {"type": "json_schema", "json_schema": {"name": "answer", "schema": schema}}
        messages = [{"role": "system", "content": "Check the post. " * 40}, {"role": "user", "content": posts[0].text}]
        semaphore = asyncio.Semaphore(concurrency)

        async def one() -> None:
            async with semaphore:
                await client.chat.completions.create(model="bench-model", messages=messages, response_format=form)  # type: ignore[arg-type,call-overload]

        await asyncio.gather(*[one() for _ in range(concurrency)])
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.gather(*[one() for _ in range(calls)])
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        await client.close()
        return wall, cpu

    try:
        await batch(posts[:2], "warmup", 2)
        import httpx

        httpx.get(base_url + "/reset", timeout=5)
        probe_wall, _, probe_calls = await batch([Sample(id="probe", text=posts[0].text, gold_label="real")], "probe", 1)
        depth = int(httpx.get(base_url + "/depth", timeout=5).json()["depth"])
        profiler = None
        if profile is not None:
            import cProfile

            profiler = cProfile.Profile()
            profiler.enable()
        wall, cpu, calls = await batch(posts, "run", concurrency)
        if profiler is not None:
            profiler.disable()
            profiler.dump_stats(str(profile))
        bare_wall, bare_cpu = await bare_client(calls)
    finally:
        await pool.close()
    return {"depth": depth, "probe_wall": probe_wall, "probe_calls": probe_calls, "wall": wall, "cpu": cpu, "calls": calls,
            "bare_wall": bare_wall, "bare_cpu": bare_cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--config", default="async")
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--delay", type=float, default=0.05)
    parser.add_argument("--profile", type=Path, help="write cProfile stats of the measured batch here")
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.delay))
        return

    from debates.runner import available_configs

    if args.config not in available_configs():
        raise SystemExit(f"configuration {args.config!r} is not available yet (available: "
                         f"{', '.join(available_configs())}); run with --config check to measure the runner alone")
    server = subprocess.Popen([sys.executable, __file__, "--serve", "--delay", str(args.delay)],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        base_url = server.stdout.readline().strip()
        with tempfile.TemporaryDirectory() as tmp:
            figures = asyncio.run(run(args.config, args.samples, args.concurrency, base_url, Path(tmp), args.profile))
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
    print(f"wall time:  {figures['wall']:.3f} s")
    print(f"ideal time: {ideal:.3f} s = ({args.samples} / {args.concurrency}) x {depth} x {args.delay * 1000:.0f} ms")
    print(f"ratio:      {ratio:.3f} (target <= 1.15) {'OK' if ratio <= 1.15 else 'MISSED'}")
    bare_ms = figures["bare_cpu"] / figures["calls"] * 1000
    own_ms = cpu_per_call_ms - bare_ms
    print(f"CPU per model call, all of this process: {cpu_per_call_ms:.2f} ms")
    print(f"  of which the bare OpenAI SDK + httpx (same calls made directly): {bare_ms:.2f} ms "
          f"(its wall time {figures['bare_wall']:.3f} s for the same calls at the same concurrency)")
    print(f"framework's own CPU per model call: {own_ms:.2f} ms (target <= 2 ms) {'OK' if own_ms <= 2 else 'MISSED'}")


if __name__ == "__main__":
    main()
