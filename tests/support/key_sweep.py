"""Every command against a model server that echoes the key it was sent, then a search for the key in
everything the commands printed and every file they wrote.

The server answers each request validly for what was asked (a check's answer, a debate turn, a JSON
schema's instance, a page summary) with the request's ``Authorization`` header written into its free text,
as some proxies and gateways do, and refuses the posts marked ``FAIL-ME`` with the header in its error
message. The key sits in a variable whose name does not look secret (a backend's ``api_key_env`` names it),
so only the product's own bookkeeping knows it is one. Each command runs as a real ``m3d`` process; the web
page is served by ``m3d serve`` and driven over HTTP and its websocket (a live debate, the review pages, a
study). Used by ``tests/acceptance/test_key_sweep.py`` and ``benchmarks/key_sweep.py``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import socket
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator

import httpx
import websockets

from tests.support.openai_stub_server import StubOpenAIServer, completion_body
from tests.support.paths import EXAMPLE_IMAGE, REPO, SHARED_DATA
from tests.support.schema_stub import fill, schema_of
from tests.support.serve_stub import answer as check_answer

KEY = "gw-ECHOKEY-5c1f0e9a7b3d42e6"
"""Shaped like no provider's key, so only its value (known through ``api_key_env``) can mask it."""
KEY_ENV = "M3D_GATEWAY"
MR2 = SHARED_DATA / "mr2-sample"
MMFAKEBENCH = REPO / "tests" / "fixtures" / "datasets" / "MMFakeBench_val" / "source" / "MMFakeBench_val.json"


class EchoServer(StubOpenAIServer):
    """A loopback OpenAI-compatible model whose every answer repeats the ``Authorization`` header it got."""

    def __init__(self) -> None:
        super().__init__(self._answer)
        self.echoed = 0

    def _answer(self, body: dict[str, Any], number: int) -> tuple[int, dict[str, Any], float]:
        headers = self.headers[number - 1]
        auth = next((v for k, v in headers.items() if k.lower() == "authorization"), "")
        echo = f"echo: Authorization: {auth}"
        if KEY in auth:
            self.echoed += 1
        text = json.dumps(body.get("messages", []), sort_keys=True)
        if "FAIL-ME" in text:
            return 400, {"error": {"message": f"refused, {echo}", "type": "invalid_request_error"}}, 0.0
        schema = schema_of(body)
        if schema is not None:
            value = fill(schema, hashlib.sha256(text.encode()).digest(), fill_arrays=True)
            return 200, completion_body(json.dumps(_echoed(value, echo))), 0.0
        status, payload, delay = check_answer(body, number, 0.0)
        content = payload["choices"][0]["message"]["content"]
        try:
            data = json.loads(content)
        except ValueError:
            return status, completion_body(f"{echo}\n{content}"), delay
        for name in ("rationale", "argument"):
            if isinstance(data.get(name), str):
                data[name] = f"{echo}; {data[name]}"
        return status, completion_body(json.dumps(data)), delay


def _echoed(value: Any, echo: str) -> Any:
    """``value`` with every free text the schema filler wrote (``Answer ...``, 58 characters) replaced by the echo."""
    if isinstance(value, str) and value.startswith("Answer ") and len(value) >= len(echo):
        return echo
    if isinstance(value, dict):
        return {k: _echoed(v, echo) for k, v in value.items()}
    if isinstance(value, list):
        return [_echoed(v, echo) for v in value]
    return value


@dataclass
class Sweep:
    """What was searched and what was found."""

    files: int = 0
    lines: int = 0
    outputs: int = 0
    output_lines: int = 0
    appearances: int = 0
    where: list[str] = field(default_factory=list)
    commands: list[str] = field(default_factory=list)
    sent: int = 0
    """Requests that carried the key to the echo server (each answered with it)."""

    def output(self, label: str, text: str) -> None:
        self.outputs += 1
        self.output_lines += text.count("\n") + 1
        found = text.count(KEY)
        if found:
            self.appearances += found
            self.where.append(f"{label}: {found}")

    def tree(self, root: Path) -> None:
        for path in sorted(root.rglob("*")):
            if path.is_symlink() or not path.is_file():
                continue
            data = path.read_bytes()
            self.files += 1
            self.lines += data.count(b"\n") + 1
            found = data.count(KEY.encode())
            if found:
                self.appearances += found
                self.where.append(f"{path.relative_to(root)}: {found}")

    def lines_out(self) -> list[str]:
        return [
            f"commands run: {len(self.commands)} ({', '.join(self.commands)})",
            f"requests that carried the key to the echoing server: {self.sent}",
            f"printed output searched: {self.outputs} streams, {self.output_lines} lines",
            f"files searched: {self.files} ({self.lines} lines)",
            f"key appearances: {self.appearances}",
        ]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def prepare(workspace: Path, server: EchoServer) -> dict[str, str]:
    """The user's project (backends file, posts) and the environment every command runs with."""
    (workspace / "m3d.yaml").write_text(
        "backend: echo\nbackends:\n"
        f"  echo: {{kind: openai, base_url: '{server.base_url}', model: gpt-4o, api_key_env: {KEY_ENV}, transport_retries: 0, "
        "vision: false}\n"
    )
    posts = [{"id": f"p{i}", "text": f"Storm over the harbour, photo {i}", "label": "fake" if i % 2 else "real"} for i in range(4)]
    posts.append({"id": "p-fail", "text": "FAIL-ME: a post the server refuses", "label": "fake"})
    (workspace / "posts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in posts))
    keep = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "TMPDIR", "SYSTEMROOT")}
    return {**keep, "PYTHONPATH": str(REPO), KEY_ENV: KEY, "M3D_CACHE_DIR": str(workspace / "cache"),
            "M3D_CONFIG": str(workspace / "m3d.yaml"), "COLUMNS": "100", "NO_COLOR": "1"}


def m3d(sweep: Sweep, workspace: Path, env: dict[str, str], label: str, *args: str, expect: tuple[int, ...] = (0,)) -> str:
    done = subprocess.run([sys.executable, "-m", "debates", *args], cwd=workspace, env=env, capture_output=True, text=True,
                          timeout=300)
    sweep.commands.append(label)
    sweep.output(f"{label} (stdout)", done.stdout)
    sweep.output(f"{label} (stderr)", done.stderr)
    if done.returncode not in expect:
        raise AssertionError(f"m3d {' '.join(args)} exited {done.returncode}:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    return done.stdout + done.stderr


EVALUATE = ["--dataset", "jsonl:posts.jsonl", "-o", "text=text", "-o", "label=label", "-o", "id=id", "--no-progress"]


def sweep_every_command(workspace: Path) -> Sweep:
    """Run every command that reaches a model, or reads what one wrote, and search all it printed and wrote."""
    sweep = Sweep()
    with EchoServer() as server:
        env = prepare(workspace, server)
        run = lambda label, *args, expect=(0,): m3d(sweep, workspace, env, label, *args, expect=expect)  # noqa: E731
        run("check", "check", "--text", "Storm over the harbour")
        run("check --json", "check", "--text", "Storm over the harbour", "--json")
        run("check --image", "check", "--text", "Storm over the statue", "--image", str(EXAMPLE_IMAGE))
        run("check (refused)", "check", "--text", "FAIL-ME please", expect=(2,))
        run("debate --save", "debate", "--config", "async", "--text", "Storm over the harbour", "--save", "saved")
        run("debate judged --json", "debate", "--config", "judged", "--text", "Storm over the harbour", "--json")
        run("evaluate check --record-trajectories", "evaluate", "--config", "check", *EVALUATE, "--out", "runs/check",
            "--record-trajectories")
        run("evaluate async", "evaluate", "--config", "async", *EVALUATE, "--out", "runs/async")
        run("report", "report", "runs/check")
        run("compare --out", "compare", "runs/check", "runs/async", "--out", "comparison")
        run("compare --json", "compare", "runs/check", "runs/async", "--json")
        run("export-sft", "export-sft", "runs/check", "--out", "sft.jsonl")
        run("backends", "backends")
        run("backends --json", "backends", "--json")
        run("reproduce", "reproduce", "t2agent-table1", "--dataset", f"mmfakebench:{MMFAKEBENCH}", "--out", "table",
            "--retrieval", "off", "--no-progress", "--resamples", "100", "--backend", "echo")
        run("select-tools", "select-tools", "--config", "t2agent-lean", "--dataset", f"mmfakebench:{MMFAKEBENCH}", "--limit", "2",
            "--candidate", "Google", "--backend", "echo")
        if MR2.is_dir():
            run("evidence", "evidence", "--replay-mr2", str(MR2), "--sample-id", "430", "--backend", "echo")
            run("evidence --json", "evidence", "--replay-mr2", str(MR2), "--sample-id", "430", "--backend", "echo", "--json")
        serve(sweep, workspace, env)
        sweep.sent = server.echoed
    sweep.tree(workspace)
    return sweep


def serve(sweep: Sweep, workspace: Path, env: dict[str, str]) -> None:
    """``m3d serve``: a live debate saved for review, the review pages, and a study, all over HTTP."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "debates", "serve", "--port", str(port), "--runs", "runs", "--dataset", "jsonl:posts.jsonl",
         "-o", "text=text", "-o", "label=label", "-o", "id=id", "--study-dir", "studies"],
        cwd=workspace, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for(base, process)
        with httpx.Client(base_url=base, follow_redirects=True, timeout=60) as browser:
            for page in _pages(browser, base):
                sweep.output(f"serve page {page[0]}", page[1])
    finally:
        process.terminate()
        try:
            out, err = process.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
    sweep.commands.append("serve")
    sweep.output("serve (stdout)", out)
    sweep.output("serve (stderr)", err)


def _wait_for(base: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"m3d serve ended: {process.stderr.read() if process.stderr else ''}")
        try:
            if httpx.get(base + "/", timeout=2).status_code < 500:
                return
        except httpx.HTTPError:
            time.sleep(0.2)
    raise AssertionError("m3d serve did not start in 60 s")


def _csrf(page: str) -> str:
    found = re.search(r'name="csrf" value="([^"]+)"', page)
    assert found, "no CSRF field on the page"
    return found.group(1)


def _pages(browser: httpx.Client, base: str) -> Iterator[tuple[str, str]]:
    live = browser.get("/live")
    yield "/live", live.text
    started = browser.post("/live", data={"csrf": _csrf(live.text), "config": "async", "backend": "echo",
                                          "text": "Storm over the harbour, seen live"}, follow_redirects=False)
    debate_id = started.headers["location"].rsplit("/", 1)[1]
    page = browser.get(f"/live/{debate_id}")
    yield f"/live/{debate_id}", page.text
    cookie = "; ".join(f"{k}={v}" for k, v in browser.cookies.items())

    async def messages() -> list[str]:
        seen: list[str] = []
        address = base.replace("http", "ws") + f"/live/{debate_id}/ws?csrf={_csrf(live.text)}"
        async with websockets.connect(address, origin=base, additional_headers={"cookie": cookie}) as ws:  # type: ignore[arg-type]
            while not seen or json.loads(seen[-1]).get("type") not in ("failed", "saved"):
                seen.append(str(await asyncio.wait_for(ws.recv(), 120)))
        return seen

    for number, message in enumerate(asyncio.run(messages())):
        yield f"websocket message {number}", message
    review = browser.get("/review")
    yield "/review", review.text
    for ref in sorted(set(re.findall(r'/review/run\?ref=([^"&]+)', review.text))):
        run_page = browser.get("/review/run", params={"ref": ref})
        yield f"/review/run?ref={ref}", run_page.text
        for sample in sorted(set(re.findall(r'/review/sample\?ref=[^"]*?&amp;id=([^"&]+)', run_page.text)))[:3]:
            shown = browser.get("/review/sample", params={"ref": ref, "id": sample})
            yield f"/review/sample?ref={ref}&id={sample}", shown.text
    form = browser.get("/study")
    yield "/study", form.text
    first = browser.post("/study", data={"csrf": _csrf(form.text), "dataset": "jsonl:posts.jsonl", "count": "1", "first": "1",
                                         "config": "check", "backend": "echo", "participant": "ann"})
    yield "study post", first.text
    reveal = browser.post(str(first.url) + "/before", data={"csrf": _csrf(form.text), "label": "fake", "confidence": "7"})
    yield "study reveal", reveal.text
    done = browser.post(str(reveal.url).replace("/reveal", "/after"), data={"csrf": _csrf(form.text), "label": "fake",
                                                                             "confidence": "8"})
    yield "study done", done.text
