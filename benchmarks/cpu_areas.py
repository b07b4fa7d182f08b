"""Where a process's CPU goes, by area of the framework, from a py-spy profile of it.

py-spy samples the process from outside: nothing inside it is instrumented, so no part of the code is
slowed more than another by being measured, as a tracing profiler's per-call hook would. It records
only the thread that holds the GIL, so that waits (the event loop's ``epoll``, a worker thread's
``fsync`` or idle queue) count as nothing, and native frames too, so that samples taken in the
garbage collector (which runs in C, under whatever Python frame happened to allocate) are known
and left out: the collector's time is measured instead, exactly, by :class:`CollectorClock`, since
pausing the process for each sample, as py-spy does, leaves the caches cold and makes the collector
(which reads every object) look several times slower than it is.

Each sample goes to the area of its innermost frame that belongs to one (:data:`AREAS`, by path);
frames of the standard library (other than asyncio and logging) and native frames (other than the
collector) pass the sample on to their caller, so ``json.dumps`` counts where it was called from.
"""

from __future__ import annotations

import collections
import gc
import os
import time
import re
import signal
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Iterable

REPO = Path(__file__).resolve().parent.parent

AREAS: tuple[tuple[str, str], ...] = (
    ("pydantic/", "pydantic validation and serialisation"),
    ("pydantic_core/", "pydantic validation and serialisation"),
    ("autogen_agentchat/messages.py", "AutoGen message objects"),
    ("autogen_agentchat/", "AutoGen group chat (agentchat)"),
    ("autogen_core/", "AutoGen runtime (autogen_core)"),
    ("opentelemetry/", "AutoGen runtime (autogen_core)"),
    ("aiohttp/", "aiohttp"),
    ("yarl/", "aiohttp"),
    ("multidict/", "aiohttp"),
    ("aiohappyeyeballs/", "aiohttp"),
    ("propcache/", "aiohttp"),
    ("frozenlist/", "aiohttp"),
    ("aiosignal/", "aiohttp"),
    ("asyncio/", "asyncio event loop and tasks"),
    ("selectors.py", "asyncio event loop and tasks"),
    ("logging/", "logging"),
    ("m3d_agents/backends/transports/wire.py", "request body building (messages, images)"),
    ("m3d_agents/media/", "request body building (messages, images)"),
    ("m3d_agents/backends/transports/shaping.py", "grammars and request shaping"),
    ("m3d_agents/grammars.py", "grammars and request shaping"),
    ("m3d_agents/backends/transports/", "HTTP transport (body to JSON, answer read, retries)"),
    ("m3d_agents/safe_json.py", "bounded JSON parsing"),
    ("m3d_agents/fence.py", "evidence fence"),
    ("m3d_agents/redaction.py", "redaction"),
    ("m3d_agents/backends/response_cache.py", "response cache (key, store)"),
    ("m3d_agents/backends/response_store.py", "response cache (key, store)"),
    ("m3d_agents/backends/metering.py", "ledger and metering"),
    ("m3d_agents/asking.py", "asking and answer parsing"),
    ("m3d_agents/parsing.py", "asking and answer parsing"),
    ("debates/debate_engine/reading.py", "asking and answer parsing"),
    ("debates/debate_engine/structured_turns.py", "asking and answer parsing"),
    ("prompts/", "prompt rendering"),
    ("debates/groupchat/runtime.py", "AutoGen runtime (autogen_core)"),
    ("debates/groupchat/team.py", "AutoGen group chat (agentchat)"),
    ("debates/groupchat/run.py", "AutoGen group chat (agentchat)"),
    ("debates/debate_engine/", "debate seats, state and protocol"),
    ("debates/strategies/debate/", "debate seats, state and protocol"),
    ("debates/turns/", "debate seats, state and protocol"),
    ("debates/eval/", "batch runner and result rows"),
    ("m3d_agents/safe_files.py", "batch runner and result rows"),
    ("debates/", "run session and strategy (set-up, verdict)"),
    ("retrieval/", "run session and strategy (set-up, verdict)"),
    ("m3d_agents/", "other framework code"),
)
"""(path, area): a frame whose file's path (relative to the repository, the site-packages or the
standard library) starts with ``path`` belongs to ``area``; the first match wins."""

GC = "garbage collection"
GC_FRAMES = frozenset({"gc_collect_main", "gc_collect_with_callback", "gc_collect_generations", "gc_collect_impl"})
TRANSPARENT = "(passed to the caller)"
FRAME = re.compile(r"^(?P<function>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+))?\)$")


def _roots() -> list[tuple[str, bool]]:
    """(directory, whether it is the standard library), longest first, to make paths relative."""
    paths = sysconfig.get_paths()
    roots = {str(REPO): False, paths["purelib"]: False, paths["platlib"]: False, paths["stdlib"]: True,
             paths["platstdlib"]: True}
    return sorted(roots.items(), key=lambda item: len(item[0]), reverse=True)


ROOTS = _roots()


def area_of(frame: str) -> str | None:
    """The area of one frame of a raw py-spy stack (``function (file:line)``); ``TRANSPARENT`` for a
    frame that passes its sample to its caller; None for a frame outside every area (a script's own)."""
    found = FRAME.match(frame)
    if found is None:
        return TRANSPARENT
    function, file = found.group("function"), found.group("file")
    if not file.endswith(".py"):
        return GC if function in GC_FRAMES else TRANSPARENT
    root, stdlib = next(((root, stdlib) for root, stdlib in ROOTS if file.startswith(root + os.sep)), ("", False))
    if not root:
        return None
    relative = file[len(root) + 1:]
    for prefix, area in AREAS:
        if relative.startswith(prefix):
            return area
    return TRANSPARENT if stdlib else None


def areas(raw: Iterable[str]) -> collections.Counter[str]:
    """Samples per area, from the lines of py-spy's raw output (``frame;frame;...;frame count``)."""
    counts: collections.Counter[str] = collections.Counter()
    memo: dict[str, str | None] = {}
    for line in raw:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack or not count.isdigit():
            continue
        chosen = "other (scripts, start-up)"
        for frame in reversed(stack.split(";")):
            if frame not in memo:
                memo[frame] = area_of(frame)
            area = memo[frame]
            if area is None:
                break
            if area != TRANSPARENT:
                chosen = area
                break
        counts[chosen] += int(count)
    return counts


class CollectorClock:
    """CPU seconds spent in the garbage collector while it is installed (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._started = 0.0

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.thread_time()
        else:
            self.seconds += time.thread_time() - self._started

    def __enter__(self) -> "CollectorClock":
        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        gc.callbacks.remove(self._callback)


class Recording:
    """py-spy recording this process, from :meth:`start` until :meth:`stop`, into a raw file."""

    def __init__(self, output: Path, rate: int) -> None:
        self.output = output
        self.rate = rate
        self.process: subprocess.Popen[str] | None = None

    def start(self) -> None:
        spy = Path(sys.executable).parent / "py-spy"
        if not spy.exists():
            raise SystemExit("--profile needs py-spy beside this Python (pip install py-spy; it is in the test extra)")
        self.process = subprocess.Popen(
            [str(spy), "record", "--pid", str(os.getpid()), "--rate", str(self.rate), "--native", "--gil",
             "--full-filenames", "--format", "raw", "--output", str(self.output)],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )
        assert self.process.stdout is not None
        said = self.process.stdout.readline()
        if "Sampling process" not in said:
            self.process.wait()
            raise SystemExit(f"py-spy could not profile this process (it needs ptrace: run as root, or with "
                             f"kernel.yama.ptrace_scope = 0): {said.strip()} {self.process.stdout.read().strip()}")

    def stop(self) -> list[str]:
        assert self.process is not None
        self.process.send_signal(signal.SIGINT)
        self.process.communicate(timeout=120)
        return self.output.read_text().splitlines()
