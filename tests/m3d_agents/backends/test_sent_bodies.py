"""What a model server receives on the benchmark's posts is byte for byte what the golden file records.

The model call path is tuned for CPU (``benchmarks/throughput.py --profile`` says where it goes);
none of that work may change a request. Each case below sends the posts of the benchmark's
sections through the real path (a batch run or a run session, AutoGen seats, the default HTTP
client) to a loopback server that keeps every body as it arrived, and compares each body's SHA-256
and length with ``tests/fixtures/sent_bodies.json``. The server answers from the body alone (the
benchmark's scripted answers, with the label picked by the body's hash), so the bodies of later turns,
which quote earlier answers, do not depend on which of two parallel calls arrived first.

After a change that is meant to change what is sent, write the file again and say why in the commit:
``M3D_WRITE_SENT_BODIES=1 .venv/bin/python -m pytest tests/m3d_agents/backends/test_sent_bodies.py``.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

from benchmarks.throughput import POST_KEY, batch, bench_pool, bench_posts, prefix_sample, scripted_answer
from debates.session import run_sample
from tests.support.openai_stub_server import StubOpenAIServer, completion_body

GOLDEN = Path(__file__).resolve().parents[2] / "fixtures" / "sent_bodies.json"
IMAGE = Path(__file__).resolve().parents[3] / "examples" / "sandy_fake_29.jpg"
WRITE = os.environ.get("M3D_WRITE_SENT_BODIES") == "1"

TEXT_POSTS = 6
"""Posts of the CPU section (text only, no evidence) per case."""
IMAGE_POSTS = 2
"""Posts of the prefix section (an image and three pieces of evidence, on a vision backend) per case."""


def answer(body: dict[str, Any], raw: bytes, long: bool) -> dict[str, Any]:
    """The benchmark's scripted answer, its label picked by the body's hash instead of by arrival order."""
    pick = int(hashlib.sha256(raw).hexdigest()[:8], 16) % 7
    found = POST_KEY.search(raw)
    seen = {found.group(0) if found else raw[:200]: pick}
    return completion_body(scripted_answer(body, raw, seen, long, pick), 100, 20)


def serve(long: bool) -> StubOpenAIServer:
    server: StubOpenAIServer

    def respond(body: dict[str, Any], number: int) -> tuple[int, dict[str, Any], float]:
        return 200, answer(body, server.raw[number - 1], long), 0.0

    server = StubOpenAIServer(respond)
    return server


def digests(raw: list[bytes]) -> list[list[Any]]:
    """Each body's SHA-256 and length, sorted: parallel calls of one turn may arrive in either order."""
    return sorted([hashlib.sha256(body).hexdigest(), len(body)] for body in raw)


def shown(body: bytes) -> str:
    """A body for a failure message: images (base64 data URLs) shortened to their hash."""
    return re.sub(rb"data:image/[a-z]+;base64,[A-Za-z0-9+/=]+",
                  lambda m: b"<image " + hashlib.sha256(m.group(0)).hexdigest()[:12].encode() + b">", body).decode()


def check(case: str, raw: list[bytes]) -> None:
    golden = json.loads(GOLDEN.read_text()) if GOLDEN.exists() else {}
    if WRITE:
        golden[case] = digests(raw)
        GOLDEN.write_text(json.dumps(golden, indent=0, sort_keys=True) + "\n")
        return
    assert case in golden, f"no golden bodies for {case}; write them with M3D_WRITE_SENT_BODIES=1"
    expected = {digest for digest, _ in golden[case]}
    changed = [body for body in raw if hashlib.sha256(body).hexdigest() not in expected]
    assert not changed, f"{case}: {len(changed)} of {len(raw)} bodies differ from the golden file; the first:\n{shown(changed[0])}"
    assert digests(raw) == golden[case], f"{case}: the same bodies, but not as many of each"


@pytest.mark.parametrize("config", ["async"])
async def test_cpu_section_posts(config: str, tmp_path: Path) -> None:
    with serve(long=False) as server:
        pool = bench_pool(server.base_url)
        try:
            figures = await batch(config, bench_posts(TEXT_POSTS), pool, tmp_path / "run", 1)
        finally:
            await pool.close()
    assert figures["calls"] == len(server.raw) > 0
    check(f"cpu/{config}", server.raw)


@pytest.mark.parametrize("config", ["async", "agentm3d", "sync", "t2agent", "factguard", "agentfact", "mmd-agent"])
async def test_prefix_section_posts(config: str) -> None:
    with serve(long=True) as server:
        pool = bench_pool(server.base_url, vision=True)
        try:
            for index in range(IMAGE_POSTS):
                sample, evidence = prefix_sample(index, True, IMAGE)
                verdict = await run_sample(config, sample, pool, backend="bench", evidence=evidence)
                assert verdict.accounting.model_calls > 0
        finally:
            await pool.close()
    check(f"image/{config}", server.raw)
