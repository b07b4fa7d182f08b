"""A newcomer's first hour on the embedded model, timed: the commands a new user runs, in order.

    python benchmarks/first_hour.py [--data ../shared/data/mediaeval2016-dev] [--out DIR] [--second-job]

Steps, each a real ``m3d`` command in a process of its own (so each starts its own embedded llama.cpp
server, as a user's command does), each printed with its wall time and the load average it ran at:

1. ``m3d check`` on the example post and image;
2. ``m3d debate --config async`` and ``m3d debate --config judged`` on a text post
   (``judged debate wall s: X`` is the line the issue's target reads: under 60 s on a quiet two-core
   machine); with ``--second-job`` the judged debate runs again while another model job (an async
   debate in a loop) runs beside it, and the line counts deadline failures;
3. ``m3d evaluate`` with ``async`` and with ``judged`` on a balanced 4-post MediaEval subset
   (``--limit 4 --sample balanced``), then ``m3d compare`` of the two (``comparison.md`` beside it);
4. one post through each paper configuration (``async``, ``judged``, ``agentm3d``, ``t2agent``,
   ``agentfact``, ``factguard`` with examples/video/flood.mp4), counted:
   ``unreadable-turn abstentions: N of 6`` (the goal is 0: every configuration ends in a verdict).

The embedded server runs on half the CPUs (one of two): llama.cpp's threads wait for one another at
every token, and on two cores shared with other jobs two threads were measured 20 to 40 times slower
than one (96 tokens in 73 s and 141 s with two threads, 4.9 s and 3.4 s with one, load average 4 to 5).

The response cache and the evidence store start empty (a fresh ``M3D_CACHE_DIR``), retrieval is off
(no keys, no network), and the figures are measured, never asserted: the machine is shared, so every
figure comes with the load average it ran at.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TEXT = "A shark swims on a flooded highway in Houston after Hurricane Harvey."
IMAGE_POST = (REPO / "examples" / "sample.txt").read_text(encoding="utf-8").strip()
VIDEO = REPO / "examples" / "video"
PAPER_CONFIGS = ("async", "judged", "agentm3d", "t2agent", "agentfact", "factguard")
UNREADABLE = re.compile(r"unreadable|could not be read|no readable|not readable|cannot be read", re.IGNORECASE)
DEADLINE = "within its deadline"


def load() -> str:
    return ", ".join(f"{value:.2f}" for value in os.getloadavg())


def m3d(env: dict[str, str], *args: str, timeout: float = 3600.0) -> tuple[subprocess.CompletedProcess[str], float]:
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "debates", *args], capture_output=True, text=True, env=env,
                            cwd=REPO, timeout=timeout)
    return result, time.perf_counter() - started


def step(name: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    at = load()
    result, wall = m3d(env, *args)
    status = "ok" if result.returncode == 0 else f"exit {result.returncode}: {last_line(result.stderr)}"
    print(f"{name} wall s: {wall:.1f} ({status}; load average at start {at})", flush=True)
    return result


def last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else "no message"


def paper_post(config: str) -> list[str]:
    if config == "factguard":
        return ["--text", (VIDEO / "caption.txt").read_text(encoding="utf-8").strip(), "--video", str(VIDEO / "flood.mp4"),
                "--transcript", (VIDEO / "transcript.txt").read_text(encoding="utf-8").strip()]
    return ["--text", IMAGE_POST, "--image", str(REPO / "examples" / "sandy_fake_29.jpg")]


def with_second_job(env: dict[str, str], out: Path) -> None:
    """The judged debate again, while another model job (async debates, one after another) runs beside it."""
    script = (f"while true; do {sys.executable} -m debates debate --config async --retrieval off --text "
              f"'Second job: a crocodile in a flooded street.' >> {out / 'second-job.log'} 2>&1; done")
    other = subprocess.Popen(["bash", "-c", script], env=env, cwd=REPO, start_new_session=True)
    try:
        time.sleep(5)
        at = load()
        fresh = {**env, "M3D_CACHE_DIR": str(out / "cache-beside-a-second-job")}  # not the first run's cached answers
        result, wall = m3d(fresh, "debate", "--config", "judged", "--retrieval", "off", "--text", TEXT)
        failures = result.stderr.count(DEADLINE) + result.stdout.count(DEADLINE)
        status = "ok" if result.returncode == 0 else f"exit {result.returncode}: {last_line(result.stderr)}"
        print(f"judged debate with a second model job, wall s: {wall:.1f} ({status}; deadline failures: {failures}; "
              f"load average at start {at})", flush=True)
    finally:
        os.killpg(other.pid, 15)
        other.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data" / "mediaeval2016-dev",
                        help="the MediaEval 2016 development set (posts.txt and images/)")
    parser.add_argument("--out", type=Path, default=None, help="where the runs go; default: a temporary folder")
    parser.add_argument("--second-job", action="store_true", help="also time the judged debate beside another model job")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="m3d-first-hour-"))
    out.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO), "M3D_CACHE_DIR": str(out / "cache"), "COLUMNS": "100"}
    env.pop("M3D_LOCAL_BASE_URL", None)
    print(f"first hour on the embedded model; {os.cpu_count()} CPUs; load average {load()}; runs in {out}", flush=True)
    began = time.perf_counter()

    step("check", env, "check", "--text", IMAGE_POST, "--image", str(REPO / "examples" / "sandy_fake_29.jpg"))
    step("async debate", env, "debate", "--config", "async", "--retrieval", "off", "--text", TEXT)
    step("judged debate", env, "debate", "--config", "judged", "--retrieval", "off", "--text", TEXT)
    if args.second_job:
        with_second_job(env, out)
    dataset = f"mediaeval:{args.data}"
    for config in ("async", "judged"):
        step(f"evaluate {config} (4 balanced MediaEval posts)", env, "evaluate", "--config", config, "--dataset", dataset,
             "-o", "one_post_per_image=true", "--limit", "4", "--sample", "balanced", "--retrieval", "off",
             "--no-progress", "--out", str(out / config))
    compared = step("compare", env, "compare", str(out / "async"), str(out / "judged"), "--out", str(out / "compare"))
    cut = "…" in compared.stdout
    print(f"compare: comparison.md {'written' if (out / 'compare' / 'comparison.md').is_file() else 'MISSING'}; "
          f"cut cells: {'yes' if cut else 'none'}; caveats: {compared.stderr.count('warning:')}", flush=True)

    unreadable = 0
    for config in PAPER_CONFIGS:
        at = load()
        result, wall = m3d(env, "check", "--config", config, "--retrieval", "off", "--json", *paper_post(config))
        if result.returncode != 0:
            print(f"{config} wall s: {wall:.1f} (failed: {last_line(result.stderr)}; load average at start {at})", flush=True)
            continue
        verdict = json.loads(result.stdout)
        reason = verdict.get("abstain_reason") or ""
        if verdict.get("abstained") and UNREADABLE.search(reason):
            unreadable += 1
        outcome = f"abstained: {reason[:160]}" if verdict.get("abstained") else f"{verdict.get('label')}"
        calls = verdict.get("accounting", {}).get("model_calls")
        retries = verdict.get("accounting", {}).get("parse_retries")
        print(f"{config} wall s: {wall:.1f} ({outcome}; {calls} model calls, {retries} unreadable answers asked again; "
              f"load average at start {at})", flush=True)
    print(f"unreadable-turn abstentions: {unreadable} of {len(PAPER_CONFIGS)}")
    print(f"total wall s: {time.perf_counter() - began:.1f}; load average at the end {load()}")


if __name__ == "__main__":
    main()
