"""Batch runs against a model endpoint that fails a fifth of its calls, and a run killed with kill -9.

A loopback fault-injection server (``tests/support/fault_server.py``, in a child process, seeded)
answers like an OpenAI-compatible vLLM server, except that 20% of calls get, in equal shares: HTTP
500, HTTP 429 with ``Retry-After``, a hang past the client's timeout, a closed connection, a 200
whose body is not JSON, or a 200 whose completion is unreadable text. The backend is a ``vllm`` one with vision on, as for
Qwen3-VL, so posts reach it with their images. ``m3d evaluate`` then runs
``--samples`` MediaEval posts through ``check`` and as many through ``async`` against it, each
in a process of its own, exactly as a user would. Then a third run (``check``) is killed with
SIGKILL midway and resumed, and its rows are compared with the data set's sample ids.

Printed, on stdout, exactly:

    samples: N                                   (rows of the check and async runs together)
    verdicts: N                                  (rows with a label)
    abstentions: N                               (rows that abstained, with their reason)
    error records: N                             (rows that record a failure, with its reason)
    crashes: 0                                   (runs that exited other than 0, or printed a traceback)
    lost or repeated rows after kill -9: 0       (ids missing from, or twice in, the resumed run)

What was injected and how each run went goes to stderr.

    PYTHONPATH=$PWD python benchmarks/faults.py [--samples 100] [--seed 7] [--rate 0.2]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
DATA = (REPO.parent / "shared" / "data" / "mediaeval2016-dev").resolve()

from debates.eval.records import EvalRow, read_rows  # noqa: E402


def start_server(seed: int, rate: float, hang_s: float, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.support.fault_server", "--seed", str(seed), "--rate", str(rate), "--hang", str(hang_s)],
        cwd=REPO, env=env, stdout=subprocess.PIPE, text=True,
    )
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


def stats(url: str) -> dict[str, int]:
    with urllib.request.urlopen(f"{url}/stats", timeout=10) as answer:
        return dict(json.loads(answer.read()))


def evaluate_command(config: str, out: Path, samples: int) -> list[str]:
    return [sys.executable, "-m", "debates", "evaluate", "--config", config,
            "--dataset", f"mediaeval:{DATA}", "-o", "one_post_per_image=true", "--limit", str(samples),
            "--backend", "faulty", "--config-file", "m3d.yaml", "--concurrency", "8", "--out", str(out), "--no-progress"]


def rows_of(path: Path) -> list[EvalRow]:
    """The run's rows, read as a resumed run reads them: a kill -9 in the middle of a write leaves a torn
    last line, which is not a row (and is cut off by the run that resumes)."""
    return read_rows(path)[0]


def lines_of(path: Path) -> int:
    """Complete lines in the results file: more than its distinct sample ids when a row was written twice."""
    return path.read_bytes().count(b"\n") if path.exists() else 0


def crashed(done: subprocess.CompletedProcess[str]) -> bool:
    return done.returncode != 0 or "Traceback" in done.stdout + done.stderr


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--rate", type=float, default=0.2)
    parser.add_argument("--timeout", type=float, default=2.0, help="the client's timeout per attempt")
    args = parser.parse_args()
    if not (DATA / "posts.txt").exists():
        sys.exit(f"needs the MediaEval 2016 development set at {DATA}")

    with tempfile.TemporaryDirectory(prefix="m3d-faults-") as scratch:
        work = Path(scratch)
        env = {**os.environ, "PYTHONPATH": str(REPO), "M3D_CACHE_DIR": str(work / "cache")}
        env.pop("M3D_CONFIG", None)
        env.pop("M3D_BACKEND", None)
        server, url = start_server(args.seed, args.rate, args.timeout * 2, env)
        try:
            (work / "m3d.yaml").write_text(
                "backends:\n"
                f"  faulty: {{kind: vllm, base_url: '{url}', model: fault-model, cache: false,"
                f" timeout_s: {args.timeout}, transport_retries: 3}}\n"
            )
            counts: Counter[str] = Counter()
            crashes = 0
            for config in ("check", "async"):
                before, started = stats(url), time.perf_counter()
                done = subprocess.run(evaluate_command(config, work / config, args.samples), cwd=work, env=env,
                                      capture_output=True, text=True)
                crashes += crashed(done)
                rows = rows_of(work / config / "results.jsonl")
                statuses: Counter[str] = Counter(row.status for row in rows)
                counts.update(samples=len(rows), **statuses)
                injected = {k: v - before.get(k, 0) for k, v in stats(url).items() if v - before.get(k, 0)}
                reasons = Counter(row.error.message[:160] for row in rows if row.error is not None)
                print(f"{config}: rc {done.returncode}, {len(rows)} rows {dict(statuses)}, "
                      f"{time.perf_counter() - started:.1f} s; server: {injected}; errors: {dict(reasons)}", file=sys.stderr)

            expected = [row.sample_id for row in rows_of(work / "check" / "results.jsonl")]
            out = work / "killed"
            process = subprocess.Popen(evaluate_command("check", out, args.samples), cwd=work, env=env,
                                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            deadline = time.monotonic() + 600
            while len(rows_of(out / "results.jsonl")) < args.samples // 2 and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            killed_midway = process.poll() is None
            process.send_signal(signal.SIGKILL)
            process.wait()
            at_kill = len(rows_of(out / "results.jsonl"))
            resumed = subprocess.run(evaluate_command("check", out, args.samples), cwd=work, env=env,
                                     capture_output=True, text=True)
            crashes += crashed(resumed)
            ids = [row.sample_id for row in rows_of(out / "results.jsonl")]
            lost = len(set(expected) - set(ids)) + len(set(ids) - set(expected))
            # The resumed run cut off any torn line, so every line left is a row: more lines than ids is a repeat.
            repeated = lines_of(out / "results.jsonl") - len(ids)
            print(f"kill -9 {'midway' if killed_midway else 'AFTER THE END'} at {at_kill} of {args.samples} rows; "
                  f"resumed: rc {resumed.returncode}, {len(ids)} rows", file=sys.stderr)
            if not killed_midway:
                lost += 1
        finally:
            server.kill()
            server.wait()

    print(f"samples: {counts['samples']}")
    print(f"verdicts: {counts['ok']}")
    print(f"abstentions: {counts['abstained']}")
    print(f"error records: {counts['error']}")
    print(f"crashes: {crashes}")
    print(f"lost or repeated rows after kill -9: {lost + repeated}")


if __name__ == "__main__":
    main()
