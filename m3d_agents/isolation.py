"""Parsing bytes from outside in worker processes, where a crash, a hang or a memory blow-up costs one item.

Web pages (lxml under newspaper3k and trafilatura), images (Pillow, the forensic decoders, OCR),
videos (FFmpeg through PyAV) and search-engine result pages are parsed by C libraries that are
not safe against hostile input, nor (lxml) against being driven from several threads at once.
A segmentation fault is not an exception: in-process it ends the run, every sample in flight, a
Ray worker, or every live debate of ``m3d serve``. So every such parse runs here, in a bounded
pool of worker processes (pebble's :class:`~pebble.ProcessPool`: a dead worker fails its own
task only and is replaced), each item with a time limit and a memory limit (``RLIMIT_AS``), each
worker replaced after a number of items. An item a worker loses raises :class:`ItemLost`, whose
line names the item and why (``page https://... not read: the extractor crashed (signal 11)``),
and is recorded for the sample in flight (:func:`collecting_losses`), so the evidence report and
the verdict's diagnostics say what was lost; the run goes on.

Who owns a pool: a run session makes one (lazily started, on its first item) and shuts it down
when it closes; the code it runs finds it through :func:`using`. Code outside any session (a
library call, ``m3d tools``, ``m3d evidence``) uses a process-wide default pool, started on first
use and shut down at exit. ``m3d serve`` gives that one pool to every debate it runs, with its
uploads and previews, so the server holds one bounded pool however many people debate; each Ray
worker, a process of its own, has its own.

Workers start from a fork server that has imported the parsing libraries once (start-up costs a
fork, not an import) and that, unlike a fork of the parent, holds no threads. The parent never
imports newspaper3k, trafilatura or lxml's HTML parser. A worker dies with its parent: the fork
server exits when the parent does (multiprocessing closes its pipe), and every worker asks the
kernel for ``SIGKILL`` when the fork server goes (``PR_SET_PDEATHSIG``), so a ``kill -9`` of the
parent leaves no process behind, even one stuck in a parse.

What crosses the process boundary is kept small and plain: bytes or absolute paths in, plain data
(pydantic models, tuples, arrays) out. Functions run in a worker must be importable by name. The
warnings an item raised come back with it and are raised again in the caller's process, so they are
shown as if the item had been parsed there (Pillow's as the product's one-line notes).
"""

from __future__ import annotations

import asyncio
import atexit
import builtins
import concurrent.futures
import contextvars
import ctypes
import io
import os
import resource
import signal
import sys
import threading
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from multiprocessing import context as mp_context
from multiprocessing import forkserver, popen_forkserver, reduction, spawn, util
from typing import Any, Callable, Iterator, Literal, TypeVar

from pydantic import Field

from m3d_agents.config_types import Settings
from m3d_agents.errors import BackendError, InputError
from m3d_agents.redaction import redact

T = TypeVar("T")

PRELOAD = (
    "lxml.html", "lxml.etree", "newspaper", "trafilatura", "charset_normalizer", "PIL.Image", "PIL.ImageFile",
    "numpy", "av", "tldextract", "py3langid", "pydantic",
)
"""Modules the fork server imports once, so that a new worker starts with them loaded. A module
missing here is imported by the first task that needs it (SciPy, for the forensic tools only: a
second at every run's start, for runs that never analyse an image); one not installed is skipped."""

Deadline = Literal["read", "analysis"]


class IsolationSettings(Settings):
    """How outside bytes are parsed: in worker processes, each item within a time and a memory limit."""

    workers: int = Field(2, ge=1, le=64, description="worker processes that parse pages, images and videos (at most "
                         "this many items are parsed at once; more wait their turn)")
    timeout_s: float = Field(20.0, gt=0, le=3600, description="seconds one item may take to be read: a page's "
                             "extraction, an image's decoding, a video's probe, a search engine's result page; a "
                             "worker past it is killed and the item reported as timed out")
    analysis_timeout_s: float = Field(120.0, gt=0, le=3600, description="seconds one analysis may take: the forensic "
                                      "tools or OCR on one image, frames decoded from one video (they work on "
                                      "full-resolution pixels, so they get longer than a read)")
    memory_mb: int = Field(2048, ge=64, le=1_048_576, description="address space (MiB) a worker may add while it parses "
                           "one item (RLIMIT_AS over what the worker holds when it starts); an item that needs more "
                           "is reported as needing more, and its worker lives on or is replaced")
    items_per_worker: int = Field(200, ge=1, description="items a worker parses before it is replaced by a fresh one, "
                                  "so that what a parser leaks or fragments does not build up")

    def limit(self, deadline: Deadline) -> float:
        return self.analysis_timeout_s if deadline == "analysis" else self.timeout_s


@dataclass(frozen=True)
class Item:
    """One thing from outside, as a loss is reported: ``page https://a.example/x``, with who parses it."""

    kind: str
    """page, image, video, search ..."""
    name: str
    """The page's address or the file's path."""
    parser: str = "the parser"
    """Who reads it, in words: "the extractor", "the image decoder", "the forensic tools"."""
    field: str | None = None
    """The input field the item came from (``images[0]``, ``video.path``), where it has one."""


class ItemLost(InputError):
    """A worker crashed, timed out or ran out of memory on one item; :attr:`line` says which and why."""

    def __init__(self, item: Item, why: str) -> None:
        self.item = item
        self.why = why
        self.line = redact(f"{item.kind} {item.name} not read: {why}")
        """One line for reports and verdicts; masked like every line the product writes (a page's address may hold a key)."""
        super().__init__(item.field or item.kind, self.line)

    def __str__(self) -> str:
        return f"{self.item.field}: {self.line}" if self.item.field else self.line

    def __reduce__(self) -> tuple[Any, ...]:
        return (ItemLost, (self.item, self.why))


_losses: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("m3d_isolation_losses", default=None)


@contextmanager
def collecting_losses() -> Iterator[list[str]]:
    """Collect the lines of every item lost inside the block (in this context and the tasks and
    threads it starts): one sample's losses, for its verdict."""
    lines: list[str] = []
    token = _losses.set(lines)
    try:
        yield lines
    finally:
        _losses.reset(token)


def _record(lost: ItemLost) -> ItemLost:
    lines = _losses.get()
    if lines is not None and lost.line not in lines:
        lines.append(lost.line)
    return lost


def size_text(mib: int) -> str:
    """``1024`` -> ``1 GiB``, ``1536`` -> ``1.5 GiB``, ``512`` -> ``512 MiB``."""
    return f"{mib / 1024:g} GiB" if mib >= 1024 else f"{mib} MiB"


# --- the worker side -------------------------------------------------------------------------

_PR_SET_PDEATHSIG = 1
_M_ARENA_MAX = -8


def _start_worker(memory_bytes: int) -> None:
    """Run once in each new worker, before its first item."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a worker stuck in C code must die at once when stopped
    try:  # what a library prints goes to the log stream, never into the parent's output (``--json``)
        os.dup2(2, 1)
    except OSError:
        pass
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        libc.mallopt(_M_ARENA_MAX, 2)  # decoder threads would each reserve a 64 MiB arena of address space
    except (OSError, AttributeError):
        pass
    # Every child of a fork server holds the write end of the pipe whose closing tells the fork server
    # that its clients are gone; a worker's copy would keep the fork server, and so the worker, alive
    # after the parent dies. Workers start no processes of their own, so they drop it.
    server: Any = forkserver._forkserver
    alive = getattr(server, "_forkserver_alive_fd", None)
    if alive is not None:
        try:
            os.close(alive)
        except OSError:
            pass
        server._forkserver_alive_fd = None
    if os.getppid() == 1:  # the fork server (and so the parent) went before the request above took hold
        os._exit(1)
    base = _address_space()
    if base is not None:
        _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        wanted = base + memory_bytes
        if hard == resource.RLIM_INFINITY or wanted <= hard:
            resource.setrlimit(resource.RLIMIT_AS, (wanted, hard))


def _address_space() -> int | None:
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


MAX_WARNINGS = 20
"""Distinct warnings one item sends back at most (a hostile image can make a library warn thousands of times)."""

Warned = tuple[str, str, str, int]
"""A warning a library raised in a worker, as plain data: its category's name, message, file and line."""


def _execute(function: Callable[..., Any], args: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[Warned]]:
    """Run one item in a worker: its tagged outcome (:func:`_outcome`) and the warnings it raised, which the
    caller's process shows as if the item had been parsed there (Pillow's become the product's notes)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tagged = _outcome(function, args)
    warned: list[Warned] = []
    for shown in caught:
        plain = (shown.category.__name__, str(shown.message), str(shown.filename), int(shown.lineno or 0))
        if plain not in warned:
            warned.append(plain)
        if len(warned) == MAX_WARNINGS:
            break
    return tagged, warned


def _outcome(function: Callable[..., Any], args: tuple[Any, ...]) -> tuple[Any, ...]:
    """What ``function(*args)`` returned or raised, as plain data, never as a pickled exception."""
    try:
        return ("value", function(*args))
    except InputError as exc:
        return ("input", exc.field, exc.problem)
    except BackendError as exc:
        return ("backend", str(exc))
    except MemoryError:
        return ("memory",)
    except RecursionError:
        return ("failed", "its input nests too deeply to read")
    except Exception as exc:  # noqa: BLE001 - third-party parsers raise anything on hostile input
        detail = " ".join(str(exc).split())
        return ("failed", f"{type(exc).__name__}: {detail[:200]}" if detail else type(exc).__name__)


# --- starting workers ------------------------------------------------------------------------


class _WorkerPopen(popen_forkserver.Popen):
    """The fork server's launch (as in Python 3.11 to 3.13), without the parent's main module and
    working folder: multiprocessing would run the script that started the parent (``m3d``, a
    benchmark) again in every worker, importing the whole command line for nothing, and move into
    the parent's folder of the moment. Workers need only the functions they are sent, which they
    import, and absolute paths."""

    def _launch(self, process_obj: Any) -> None:
        prep_data = spawn.get_preparation_data(process_obj._name)
        prep_data.pop("init_main_from_name", None)
        prep_data.pop("init_main_from_path", None)
        prep_data.pop("dir", None)  # items name absolute paths; a caller's folder removed meanwhile must not stop a worker
        buf = io.BytesIO()
        mp_context.set_spawning_popen(self)
        try:
            reduction.dump(prep_data, buf)
            reduction.dump(process_obj, buf)
        finally:
            mp_context.set_spawning_popen(None)
        launcher: Any = self
        self.sentinel, w = forkserver.connect_to_new_process(launcher._fds)
        _parent_w = os.dup(w)
        helpers: Any = util
        self.finalizer = util.Finalize(self, helpers.close_fds, (_parent_w, self.sentinel))
        with open(w, "wb", closefd=True) as f:
            f.write(buf.getbuffer())
        self.pid = forkserver.read_signed(self.sentinel)


class _WorkerProcess(mp_context.ForkServerProcess):
    @staticmethod
    def _Popen(process_obj: Any) -> popen_forkserver.Popen:
        if sys.version_info >= (3, 14):  # its launch adds a handshake this copy does not know; run the main module instead
            return popen_forkserver.Popen(process_obj)
        return _WorkerPopen(process_obj)


class _WorkerContext(mp_context.ForkServerContext):
    Process = _WorkerProcess


_context_lock = threading.Lock()
_worker_context: _WorkerContext | None = None


def _context() -> _WorkerContext:
    global _worker_context
    with _context_lock:
        if _worker_context is None:
            context = _WorkerContext()
            context.set_forkserver_preload(list(PRELOAD))
            _worker_context = context
        return _worker_context


# --- the parent side -------------------------------------------------------------------------


class ParserPool:
    """A bounded pool of parser processes, started on its first item; :meth:`close` ends its workers.

    Safe to use from any thread and from any number of event loops at once.
    """

    def __init__(self, settings: IsolationSettings | None = None) -> None:
        self.settings = settings or IsolationSettings()
        self._pool: Any = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def started(self) -> bool:
        return self._pool is not None

    def worker_pids(self) -> list[int]:
        """The worker processes alive now (for tests and diagnostics)."""
        pool = self._pool
        if pool is None:
            return []
        workers = pool._pool_manager.worker_manager.workers
        return [pid for pid, process in list(workers.items()) if process.is_alive()]

    def _running(self) -> Any:
        from pebble import ProcessPool

        with self._lock:
            if self._closed:
                raise RuntimeError("the parser pool is shut down")
            if self._pool is not None and not self._pool.active:
                self._pool.stop()
                self._pool = None
            if self._pool is None:
                self._pool = ProcessPool(
                    max_workers=self.settings.workers, max_tasks=self.settings.items_per_worker,
                    initializer=_start_worker, initargs=(self.settings.memory_mb * 1024 * 1024,), context=_context(),
                )
            return self._pool

    def submit(self, function: Callable[..., Any], *args: Any, deadline: Deadline = "read") -> concurrent.futures.Future[Any]:
        """Start ``function(*args)`` in a worker; the future's result is :func:`_execute`'s outcome and warnings."""
        future: concurrent.futures.Future[Any] = self._running().schedule(_execute, args=(function, args),
                                                                          timeout=self.settings.limit(deadline))
        return future

    def outcome(self, item: Item, future: concurrent.futures.Future[Any], deadline: Deadline = "read") -> Any:
        """The value of a finished :meth:`submit`, or the error it stands for (:class:`ItemLost` for a lost item)."""
        from pebble import ProcessExpired

        try:
            result = future.result()
        except concurrent.futures.TimeoutError:
            raise _record(ItemLost(item, f"{item.parser} timed out after {self.settings.limit(deadline):g} s")) from None
        except ProcessExpired as exc:
            code = exc.exitcode
            why = f"{item.parser} crashed (signal {-code})" if code < 0 else f"{item.parser}'s process ended with exit status {code}"
            raise _record(ItemLost(item, why)) from None
        except concurrent.futures.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - the pool itself failed (shut down, broken); the item is lost, the run goes on
            raise _record(ItemLost(item, f"{item.parser} could not run ({type(exc).__name__}: {exc})")) from None
        tagged, warned = result
        _warn_again(warned)
        kind = tagged[0]
        if kind == "value":
            return tagged[1]
        if kind == "input":
            raise InputError(tagged[1], tagged[2])
        if kind == "backend":
            raise BackendError(tagged[1])
        if kind == "memory":
            raise _record(ItemLost(item, f"{item.parser} needed more than {size_text(self.settings.memory_mb)}"))
        raise _record(ItemLost(item, f"{item.parser} failed ({tagged[1]})"))

    def _submitted(self, item: Item, function: Callable[..., Any], args: tuple[Any, ...], deadline: Deadline) -> concurrent.futures.Future[Any]:
        try:
            return self.submit(function, *args, deadline=deadline)
        except RuntimeError as exc:  # shut down, or broken beyond a restart
            raise _record(ItemLost(item, f"{item.parser} could not run ({exc})")) from None

    def call(self, item: Item, function: Callable[..., T], *args: Any, deadline: Deadline = "read") -> T:
        """``function(*args)`` in a worker, waiting for it in this thread."""
        value: T = self.outcome(item, self._submitted(item, function, args, deadline), deadline)
        return value

    async def run(self, item: Item, function: Callable[..., T], *args: Any, deadline: Deadline = "read") -> T:
        """``function(*args)`` in a worker, awaited; a cancelled caller cancels the item (its worker is stopped)."""
        future = self._submitted(item, function, args, deadline)
        try:
            await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            future.cancel()
            raise
        except BaseException:  # noqa: BLE001 - the outcome below names it
            pass
        value: T = self.outcome(item, future, deadline)
        return value

    def close(self) -> None:
        """Stop the workers (an item in flight is lost) and refuse new items; safe to call twice."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.stop()
            try:
                pool.join(timeout=10)
            except (TimeoutError, RuntimeError):
                pass


_categories: dict[str, type[Warning]] = {}


def _warn_again(warned: list[Warned]) -> None:
    """Raise here the warnings a worker's item raised, under this process's filters and display (for Pillow's,
    the product's one-line notes). A category is rebuilt by name rather than unpickled, so that a warning of a
    page parser never imports that parser here."""
    for name, message, filename, lineno in warned:
        category = _categories.get(name)
        if category is None:
            builtin = getattr(builtins, name, None)
            category = builtin if isinstance(builtin, type) and issubclass(builtin, Warning) else type(name, (UserWarning,), {})
            _categories[name] = category
        module = filename.replace("\\", "/").rsplit("/site-packages/", 1)[-1].removesuffix(".py").replace("/", ".")
        warnings.warn_explicit(message, category, filename, lineno, module=module, registry={})


_current: contextvars.ContextVar[ParserPool | None] = contextvars.ContextVar("m3d_parser_pool", default=None)
_default_lock = threading.Lock()
_default: ParserPool | None = None


@contextmanager
def using(pool: ParserPool) -> Iterator[ParserPool]:
    """Parse with ``pool`` inside the block (and the tasks and threads it starts)."""
    token = _current.set(pool)
    try:
        yield pool
    finally:
        _current.reset(token)


def current_pool() -> ParserPool:
    """The pool of the run in this context, else the process's default pool (started on first use, shut down at exit)."""
    pool = _current.get()
    if pool is not None:
        return pool
    global _default
    with _default_lock:
        if _default is None:
            _default = ParserPool()
            atexit.register(_default.close)
        return _default


def parse(item: Item, function: Callable[..., T], *args: Any, deadline: Deadline = "read") -> T:
    """``function(*args)`` in a worker of the current pool; waits in this thread."""
    return current_pool().call(item, function, *args, deadline=deadline)


async def parse_async(item: Item, function: Callable[..., T], *args: Any, deadline: Deadline = "read") -> T:
    """``function(*args)`` in a worker of the current pool, awaited."""
    return await current_pool().run(item, function, *args, deadline=deadline)

