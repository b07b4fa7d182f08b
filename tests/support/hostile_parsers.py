"""Test-only parsers that fail the way C libraries do: they crash, hang or allocate without end.

The parser pool runs a function in its workers by name, so a test puts one of these in place of
the product's parsing function with ``monkeypatch`` and sees what the run makes of it. This module
imports nothing heavy: a worker loads it within any time limit, however busy the machine.
"""

from __future__ import annotations

import os
import signal
import time
from typing import TYPE_CHECKING, Callable

import numpy as np

if TYPE_CHECKING:
    from m3d_agents.isolation import ParserPool

WARM_PAGE = "<html><body><article>" + "<p>The harbour town voted to rebuild its flood defences.</p>" * 10 + "</article></body></html>"


def crash(*_args: object) -> None:
    """Die as a segmentation fault in a parser does."""
    os.kill(os.getpid(), signal.SIGSEGV)


def hang(*_args: object) -> None:
    """Never come back (a parser stuck in a loop)."""
    while True:
        time.sleep(3600)


def allocate(*_args: object) -> None:
    """Allocate without end (a decompression bomb, a parser's runaway buffer); the pages are reserved, not
    written, so the limit is reached at once however busy the machine."""
    held = []
    while True:
        held.append(np.empty(64 * 1024 * 1024, dtype=np.uint8))


def refuse(field: str, problem: str) -> None:
    """A parser that finds its input unusable, as the product's own decoders say so."""
    from m3d_agents.errors import InputError

    raise InputError(field, problem)


def divide(a: float, b: float) -> float:
    """A parser with a bug: dividing by zero raises."""
    return a / b


def warn_twice(message: str) -> int:
    """A parser that reads its input but warns about it, as Pillow does about a damaged EXIF block (twice over)."""
    import warnings

    class ParserWarning(UserWarning):
        pass

    for _ in range(2):
        warnings.warn(message, ParserWarning, stacklevel=1)
    return 1


def page_or_failure(body: str | bytes, url: str | None) -> object:
    """The product's page reader, except for pages whose address says how to fail: crash, hang or allocate."""
    for word, failure in (("crash", crash), ("hang", hang), ("allocate", allocate)):
        if url and word in url:
            failure()
    from retrieval.extract import page_from_body

    return page_from_body(body, url)


FAILURES: dict[str, tuple[Callable[..., object], str]] = {
    "crash": (crash, "crashed (signal 11)"),
    "hang": (hang, "timed out after"),
    "allocate": (allocate, "needed more than"),
}
"""Each test-only parser and the words its loss is reported with."""


def warm(pool: ParserPool) -> None:
    """Let the workers of ``pool`` read a page each, so that their first imports on a busy machine are
    behind them before a test's time limits count."""
    from m3d_agents.isolation import Item
    from retrieval.extract import page_from_body

    futures = [pool.submit(page_from_body, WARM_PAGE, "https://warm.example/") for _ in range(2 * pool.settings.workers)]
    for future in futures:
        pool.outcome(Item("page", "https://warm.example/"), future)
