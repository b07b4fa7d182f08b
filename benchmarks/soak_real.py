"""A soak over real posts: seven configurations read real pages, images and a video, in processes whose crashes are counted.

What is checked, and from what:

- claims of the MR2 sample (``../shared/data/mr2-sample``) with their recorded evidence, replayed as
  ``--replay-mr2`` replays them: the saved HTML of every page found for a claim is parsed (newspaper3k
  and trafilatura over lxml) and the claim's image decoded. Each of the five claims is checked
  several times under ids of its own: the trace finds a claim's pages by its caption and image, so
  every copy parses them again;
- MediaEval 2016 development posts (``../shared/data/mediaeval2016-dev``, one post per image), each
  configuration its own posts, with their images; each post is checked twice, the second pass after
  the first, so that a piece's last half does the work of its first half again (bounded caches, such
  as the decoded images', fill in the first pass; what the second adds, it adds for nothing new);
- the example video post (``examples/video``), probed and its frames taken.

Configurations: ``check``, ``async``, ``judged``, ``agentm3d``, ``t2agent``, ``agentfact`` and
``factguard``, on a loopback model in a process of its own (``tests/support/reproduce_script.py``)
that answers every call in its format: JSON valid under the schema a call sends, and the turn formats
that a grammar (vLLM's ``structured_outputs`` field, as the ``vllm`` kind sends it) enforces. ``check``
runs on it as a text-only model (``vision: false``), so every image of its posts reaches the model
through the forensic tools (ELA, JPEG, EXIF, noise) and OCR; the others are sent the images.

Each configuration's MR2 claims, and its posts, are one piece: a process of its own
(``benchmarks/soak_real.py --piece CONFIG:PART``) that opens a ``RunSession`` and runs the batch
evaluation runner over the piece's samples into a run folder, as ``m3d evaluate`` does, at
``--concurrency`` samples in flight; ``--processes`` pieces run at once. A parser that kills its
process (a segfault in a C library) ends that piece alone: the soak counts it, and runs the same
command again, which resumes the run folder (the product's own resume), until the piece is done.
One piece (``--kill``) is killed with SIGKILL once half its rows are written, and resumed the same way.

Printed on stdout, exactly:

    process crashes: N
        evaluation processes that ended on a signal or with an error, the soak's own kill -9 aside
    items a parser lost: N (each named in its report)
        pages, images and videos a verdict says could not be read (``page URL not read: why``);
        those a report mentions without naming are counted and said so instead
    rows lost or repeated: N
        sample ids missing from their run folder, or there twice, once every piece is done
    peak RSS MB: X
        the most memory an evaluation process held, with the worker processes it started (their
        proportional set size: pages a forked worker shares with its parent count once)
    RSS growth over the last half %: Y
        the largest, over the pieces that ran from start to end in one process, of how much more memory
        the process held at most while the last half of its rows was written than at most while the
        first half was (both halves do the same work); goal: under 10

Each piece's figures, every crash with its exit status and the tail of its log, and each lost item
go to stderr.

    PYTHONPATH=$PWD python benchmarks/soak_real.py [--samples 500] [--concurrency 8] [--processes 2]
        [--configs check,async,...] [--kill agentfact:mr2] [--keep FOLDER] [--quick]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterator

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
DATA = (REPO.parent / "shared" / "data").resolve()
MR2 = DATA / "mr2-sample"
MEDIAEVAL = DATA / "mediaeval2016-dev"
VIDEO = REPO / "examples" / "video"

if TYPE_CHECKING:
    from m3d_agents.sample import Sample

CONFIGS = ("check", "async", "judged", "agentm3d", "t2agent", "agentfact", "factguard")
QUICK_CONFIGS = ("check", "factguard")
PARTS = ("mr2", "posts")
TEXT_ONLY = ("check",)
"""Configurations run on a text-only model, so that their posts' images go through the forensic tools and OCR."""

LOST = re.compile(r"\b(page|image|video|search) (.+?) not read: (.+)")
"""How a verdict names an item that a parser could not read (the evidence report and the diagnostics say it so)."""
UNNAMED = re.compile(r"not read: |crashed \(signal \d+\)")


# ---- the samples ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Plan:
    """How many samples each configuration gets, of each kind."""

    mr2: int
    mediaeval: int
    video: int

    @staticmethod
    def of(total: int, configs: int) -> "Plan":
        each = max(3, math.ceil(total / configs))
        video = max(1, each // 20)
        mr2 = max(1, round(each * 0.4))
        return Plan(mr2=mr2, mediaeval=max(1, each - mr2 - video), video=video)


def piece_samples(config: str, part: str, plan: Plan) -> list[Sample]:
    """The samples of one piece, the same in the soak and in the piece's process."""
    from m3d_agents.datasets import load_dataset
    from m3d_agents.sample import Sample, VideoRef
    from retrieval.providers.mr2_trace import MR2Trace

    if part == "mr2":
        trace = MR2Trace(MR2)
        claims = [trace.sample(i) for i in trace.ids()]
        gold = {"true": "real", "false": "fake"}
        return [claims[k % len(claims)].model_copy(update={
            "id": f"{claims[k % len(claims)].id}-{config}-{k}", "taxonomy": "binary",
            "gold_label": gold.get(str(claims[k % len(claims)].gold_label)),
        }) for k in range(plan.mr2)]
    posts = load_dataset(f"mediaeval:{MEDIAEVAL}", {"one_post_per_image": "true"}).samples
    distinct = math.ceil(plan.mediaeval / 2)
    start = CONFIGS.index(config) * distinct if config in CONFIGS else 0
    once = [posts[(start + k) % len(posts)] for k in range(distinct)]
    # Each post twice, the second pass in the same order: the piece's last half repeats its first half's
    # work, so memory that grows between them grows for no new input.
    chosen = once + [post.model_copy(update={"id": f"{post.id}-again"}) for post in once][: plan.mediaeval - distinct]
    caption = (VIDEO / "caption.txt").read_text(encoding="utf-8").strip()
    transcript = (VIDEO / "transcript.txt").read_text(encoding="utf-8").strip()
    videos = [Sample(id=f"video-{config}-{k}", text=caption, gold_label="fake",
                     video=VideoRef(path=VIDEO / "flood.mp4", transcript=transcript)) for k in range(plan.video)]
    # Spread through the posts, so that every stretch of the piece asks the same mix of its parsers.
    mixed = list(chosen)
    for k, video in reversed(list(enumerate(videos))):
        mixed.insert(round((k + 0.5) * len(chosen) / len(videos)), video)
    return mixed


# ---- one piece (its own process) --------------------------------------------------------------

async def run_piece(config: str, part: str, plan: Plan, url: str, out: Path, concurrency: int) -> int:
    """Run (or resume) one piece into ``out`` as ``m3d evaluate`` would; 130 when it was interrupted."""
    from debates.eval.records import RunManifest
    from debates.eval.run.batch import BatchRunner
    from debates.session import RunSession
    from m3d_agents.backends.config import BackendConfig, BackendSettings

    backend = BackendConfig(kind="vllm", base_url=url, model="scripted-model", cache=False, concurrency=concurrency,
                            vision=config not in TEXT_ONLY)
    settings = BackendSettings(backend="soak", backends={"soak": backend})
    samples = piece_samples(config, part, plan)
    if part == "mr2":
        session = RunSession(config, settings, backend="soak", replay_mr2=MR2)
    else:
        session = RunSession(config, settings, backend="soak", retrieval="off")
    manifest = RunManifest(config=config, dataset=f"soak-{part}", backend="soak", seed=0, taxonomy="binary")
    async with session:
        outcome = await BatchRunner(config, samples, session, out, manifest, concurrency=concurrency).run()
    return 130 if outcome.interrupted else 0


# ---- watching a piece from outside ------------------------------------------------------------

def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(stat.read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(stat.parent.name))
    found, todo = [], [pid]
    while todo:
        current = todo.pop()
        found.append(current)
        todo += children.get(current, [])
    return found


def group_members(group: int) -> list[int]:
    """The processes of a process group (an evaluation process's own and those it started)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            if int(stat.read_text().rsplit(")", 1)[1].split()[2]) == group:
                found.append(int(stat.parent.name))
        except (OSError, IndexError, ValueError):
            continue
    return found


def outliving(group: int, grace_s: float = 3.0) -> int:
    """How many processes of ``group`` are still there ``grace_s`` after its leader ended; then they are killed."""
    deadline = time.monotonic() + grace_s
    while group_members(group) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = len(group_members(group))
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return left


def memory_mb(pid: int) -> float:
    """The proportional set size of ``pid`` and its descendants (resident memory, shared pages split among their sharers)."""
    total = 0
    for member in descendants(pid):
        try:
            lines = Path(f"/proc/{member}/smaps_rollup").read_text().splitlines()
            key = "Pss:"
        except OSError:
            try:
                lines = Path(f"/proc/{member}/status").read_text().splitlines()
                key = "VmRSS:"
            except OSError:
                continue
        total += next((int(line.split()[1]) for line in lines if line.startswith(key)), 0)
    return total / 1024


class RowCounter:
    """Complete lines of a results file, read as it grows (and again from the start when a resumed run cut
    off the torn line a kill left)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.lines = 0

    def __call__(self) -> int:
        try:
            with open(self.path, "rb") as handle:
                if os.fstat(handle.fileno()).st_size < self.offset:
                    self.offset = self.lines = 0
                handle.seek(self.offset)
                chunk = handle.read()
        except OSError:
            return self.lines
        self.offset += len(chunk)
        self.lines += chunk.count(b"\n")
        return self.lines


@dataclass
class Piece:
    config: str
    part: str
    expected: list[str]
    folder: Path
    kill_at: int | None = None
    """Kill the piece's process with SIGKILL once this many rows are in (then resume it)."""
    attempts: list[str] = field(default_factory=list)
    crashes: int = 0
    peak_mb: float = 0.0
    growth: float | None = None
    wall_s: float = 0.0

    @property
    def name(self) -> str:
        return f"{self.config}:{self.part}"


def signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


def run_and_watch(piece: Piece, command: list[str], env: dict[str, str], log: Path, timeout_s: float) -> None:
    """Run ``piece`` (again, until its rows are all there), measuring memory, killing it once if asked."""
    started = time.monotonic()
    counter = RowCounter(piece.folder / "results.jsonl")
    total = len(piece.expected)
    for attempt in range(1, 11):
        at_start = counter()
        with open(log, "ab") as output:
            process = subprocess.Popen(command, cwd=REPO, env=env, stdout=output, stderr=subprocess.STDOUT,
                                       start_new_session=True)
        deadline = time.monotonic() + timeout_s
        memory: list[tuple[int, float]] = []
        killed = hung = False
        polls = 0
        while process.poll() is None:
            rows = counter()
            if piece.kill_at is not None and attempt == 1 and piece.kill_at <= rows < total:
                os.kill(process.pid, signal.SIGKILL)
                killed = True
            if polls % 4 == 0:
                # Memory every 0.2 s; rows every 0.05 s, so that the kill lands between two rows.
                measured = memory_mb(process.pid)
                if measured:
                    memory.append((rows - at_start, measured))
                    piece.peak_mb = max(piece.peak_mb, measured)
            if time.monotonic() > deadline:
                os.kill(process.pid, signal.SIGKILL)
                hung = True
            polls += 1
            time.sleep(0.05)
        code = process.wait()
        with open(log.with_suffix(".memory.jsonl"), "a") as trace:
            trace.write(json.dumps({"attempt": attempt, "rows_before": at_start, "rows_and_mb": memory}) + "\n")
        left = outliving(process.pid)
        rows = counter()
        orphans = f"; {left} of the processes it started outlived it" if left else ""
        if killed:
            piece.attempts.append(f"kill -9 at {rows} of {total} rows{orphans}")
        elif code == 0:
            piece.attempts.append(f"done ({rows - at_start} rows)")
            if at_start == 0:
                piece.growth = growth(memory, total)
        else:
            piece.crashes += 1
            why = f"still running after {timeout_s:g} s (--timeout), killed" if hung else (
                signal_name(code) if code < 0 else f"exit status {code}")
            piece.attempts.append(f"CRASH ({why}) at {rows} of {total} rows{orphans}")
            tail = log.read_text(errors="replace")[-1500:]
            print(f"{piece.name}: the evaluation process ended with {why}; its log ends:\n{tail}", file=sys.stderr)
        if code == 0 and rows >= total:
            break
    if piece.kill_at is not None and not any(a.startswith("kill -9") for a in piece.attempts):
        piece.attempts.append(f"its rows came in too fast for the kill -9 to land between row {piece.kill_at} and the last")
    piece.wall_s = time.monotonic() - started


def growth(memory: list[tuple[int, float]], total: int) -> float | None:
    """How much more memory the process held at most while the last half of its rows was written than at most
    while the first half was. Both halves do the same work (the posts are checked twice, the MR2 claims
    cycle), so the bounded caches filled in the first half; what the second adds, it adds for nothing new."""
    first = [mb for rows, mb in memory if rows < total / 2]
    # A piece of a few samples may end before a measure falls in its last half: its last measure stands in.
    last = [mb for rows, mb in memory if rows >= total / 2] or [mb for _, mb in memory[-1:]]
    if not first or not last:
        return None
    return 100.0 * (max(last) - max(first)) / max(first)


# ---- what the rows say ------------------------------------------------------------------------

def strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


def examine(piece: Piece) -> tuple[int, list[str], int]:
    """Rows lost or repeated, the items a parser lost (named), and the mentions of a lost item that name none."""
    from debates.eval.records import read_rows

    results = piece.folder / "results.jsonl"
    rows, _ = read_rows(results)
    ids = [row.sample_id for row in rows]
    lines = results.read_bytes().count(b"\n") if results.exists() else 0
    wrong = len(set(piece.expected) ^ set(ids)) + (lines - len(ids))
    lost: list[str] = []
    unnamed = 0
    for row in rows:
        seen: set[tuple[str, str]] = set()
        for text in strings(row.verdict or {}):
            found = [(m.group(1), m.group(2), m.group(3)) for m in LOST.finditer(text)]
            for kind, name, why in found:
                if (kind, name) not in seen:
                    seen.add((kind, name))
                    lost.append(f"{row.sample_id}: {kind} {name} not read: {why.strip()}")
            if not found and UNNAMED.search(text):
                unnamed += 1
    return wrong, lost, unnamed


# ---- the soak ---------------------------------------------------------------------------------

def start_server(env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen([sys.executable, "-m", "tests.support.reproduce_script"], cwd=REPO, env=env,
                              stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    return server, server.stdout.readline().strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=500, help="samples in all, shared among the configurations")
    parser.add_argument("--concurrency", type=int, default=8, help="samples in flight in each evaluation process")
    parser.add_argument("--processes", type=int, default=2, help="evaluation processes at once")
    parser.add_argument("--kill", default="agentfact:mr2", help="the piece (CONFIG:mr2 or CONFIG:posts) killed with "
                        "kill -9 midway and resumed; none: no kill")
    parser.add_argument("--configs", default=",".join(CONFIGS), help="the configurations, comma-separated")
    parser.add_argument("--quick", action="store_true", help=f"a few samples of {' and '.join(QUICK_CONFIGS)} only")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds an evaluation process may run")
    parser.add_argument("--keep", type=Path, default=None, help="keep the run folders and logs here")
    parser.add_argument("--piece", help=argparse.SUPPRESS)
    parser.add_argument("--plan", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--out", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()

    if args.piece:
        config, part = args.piece.split(":")
        plan = Plan(*(int(n) for n in args.plan.split(",")))
        sys.exit(asyncio.run(run_piece(config, part, plan, args.url, args.out, args.concurrency)))

    for needed in (MR2 / "dataset_items_test.json", MEDIAEVAL / "posts.txt", VIDEO / "flood.mp4"):
        if not needed.exists():
            sys.exit(f"needs {needed} (the shared data beside the repository, and the example video)")
    configs = QUICK_CONFIGS if args.quick else tuple(c.strip() for c in args.configs.split(",") if c.strip())
    unknown = sorted(set(configs) - set(CONFIGS))
    if unknown or not configs:
        sys.exit(f"--configs: {', '.join(unknown) or 'none given'}; the soak runs {', '.join(CONFIGS)}")
    plan = Plan(mr2=5, mediaeval=2, video=1) if args.quick else Plan.of(args.samples, len(configs))
    kill = f"{configs[0]}:mr2" if args.quick else args.kill

    scratch = tempfile.TemporaryDirectory(prefix="m3d-soak-real-")
    work = args.keep.resolve() if args.keep else Path(scratch.name)
    work.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "PYTHONPATH": str(REPO), "M3D_CACHE_DIR": str(work / "cache")}
    for name in ("M3D_CONFIG", "M3D_BACKEND"):
        env.pop(name, None)
    server, url = start_server(env)
    pieces = [Piece(config, part, [s.id for s in piece_samples(config, part, plan)], work / f"{config}-{part}")
              for config in configs for part in PARTS]
    for piece in pieces:
        if piece.name == kill:
            piece.kill_at = 1 if args.quick else math.ceil(len(piece.expected) / 2)
    if kill != "none" and not any(p.kill_at for p in pieces):
        print(f"--kill {kill}: no such piece in this run, so none is killed", file=sys.stderr)
    started = time.monotonic()
    try:
        queue = list(pieces)
        lock = threading.Lock()

        def worker() -> None:
            while True:
                with lock:
                    if not queue:
                        return
                    piece = queue.pop(0)
                command = [sys.executable, str(Path(__file__).resolve()), "--piece", piece.name, "--plan",
                           f"{plan.mr2},{plan.mediaeval},{plan.video}", "--url", url, "--out", str(piece.folder),
                           "--concurrency", str(args.concurrency)]
                run_and_watch(piece, command, env, work / f"{piece.config}-{piece.part}.log", args.timeout)
                print(f"{piece.name}: {len(piece.expected)} samples, {piece.wall_s:.0f} s, peak {piece.peak_mb:.0f} MB, "
                      f"growth over the last half {'n/a' if piece.growth is None else f'{piece.growth:.1f}%'}; "
                      f"{'; '.join(piece.attempts)}", file=sys.stderr)

        threads = [threading.Thread(target=worker) for _ in range(max(1, args.processes))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        server.kill()
        server.wait()

    wrong = unnamed = 0
    lost: list[str] = []
    for piece in pieces:
        piece_wrong, piece_lost, piece_unnamed = examine(piece)
        wrong, unnamed = wrong + piece_wrong, unnamed + piece_unnamed
        lost += piece_lost
    for item in lost:
        print(f"lost: {item}", file=sys.stderr)
    reasons = Counter(item.rsplit(" not read: ", 1)[1] for item in lost)
    load = os.getloadavg()[0]
    total = sum(len(p.expected) for p in pieces)
    print(f"{total} samples ({len(configs)} configurations x {plan.mr2} MR2 claims, {plan.mediaeval} MediaEval posts, "
          f"{plan.video} video posts) in {time.monotonic() - started:.0f} s on {os.cpu_count()} cores, load average "
          f"{load:.2f}; lost items by reason: {dict(reasons)}; run folders in {work}", file=sys.stderr)
    growths = [p.growth for p in pieces if p.growth is not None]
    named = "each named in its report" if not unnamed else f"{unnamed} of them not named in their report"
    print(f"process crashes: {sum(p.crashes for p in pieces)}")
    print(f"items a parser lost: {len(lost) + unnamed} ({named})")
    print(f"rows lost or repeated: {wrong}")
    print(f"peak RSS MB: {max(p.peak_mb for p in pieces):.1f}")
    print(f"RSS growth over the last half %: {max(growths):.1f}" if growths else "RSS growth over the last half %: n/a")
    if args.keep is None:
        scratch.cleanup()


if __name__ == "__main__":
    main()
