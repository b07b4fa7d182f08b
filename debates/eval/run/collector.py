"""The garbage collector's settings while a batch run is under way.

CPython's cyclic collector looks at the young objects every 700 net allocations, and at every object
every hundred of those. A batch run allocates a great many short-lived objects per model call (AutoGen's
messages and envelopes, tasks, pydantic models) and keeps a large, unchanging heap (modules,
configurations, prompts, the session). Measured on ``benchmarks/throughput.py``'s CPU section, the
young and middle collections during a run found no garbage at all, and the collector cost about
0.25 ms of CPU per model call, more than a bare HTTP client spends on the whole call.

So for the length of a run, :func:`batch_collector` moves every object alive at its start out of the
collector's sight (``gc.freeze``: they outlive the run anyway) and looks at the young objects every
:data:`YOUNG_THRESHOLD` net allocations; the collector then costs about a tenth as much.

Garbage in cycles must still be collected while the run goes on. A sample's objects live for
seconds, long enough to be moved to the oldest generation, and that generation's automatic
collection hardly ever comes at these thresholds (none came in a 90-sample run): what a finished
sample left in cycles (its AutoGen runtime and tasks, and the request bodies they reference, each
with its images encoded) stayed until the run ended. So :func:`after_sample` collects every
generation once a sample is done, at most every :data:`FULL_COLLECTION_S` seconds; the frozen heap
is not looked at, so such a collection costs milliseconds. Everything is as it was once the run ends: the threshold,
and the frozen objects back in the collector's sight. Runs may nest or overlap (two runs in one event
loop); the settings are restored when the last one ends. A process that froze objects itself (before
forking its workers, say) keeps its own freeze: only the threshold is changed then.
"""

from __future__ import annotations

import gc
import time
from contextlib import contextmanager
from typing import Iterator

YOUNG_THRESHOLD = 20_000
"""Net allocations between two collections of the young objects (CPython's default: 700)."""

FULL_COLLECTION_S = 1.0
"""Seconds at least between two full collections after finished samples (:func:`after_sample`)."""

_runs = 0
_saved: tuple[int, int, int] = (700, 10, 10)
_froze = False
_last_full = 0.0


@contextmanager
def batch_collector() -> Iterator[None]:
    """The collector tuned for a batch run while the block runs (see the module's docstring)."""
    global _runs, _saved, _froze
    if _runs == 0:
        _saved = gc.get_threshold()
        _froze = gc.get_freeze_count() == 0
        if _froze:
            gc.freeze()
        gc.set_threshold(max(YOUNG_THRESHOLD, _saved[0]), _saved[1], _saved[2])
    _runs += 1
    try:
        yield
    finally:
        _runs -= 1
        if _runs == 0:
            gc.set_threshold(*_saved)
            if _froze:
                gc.unfreeze()


def after_sample() -> bool:
    """Collect the garbage a finished sample left in cycles (all generations), unless one was collected less
    than :data:`FULL_COLLECTION_S` ago; True when it collected."""
    global _last_full
    now = time.monotonic()
    if now - _last_full < FULL_COLLECTION_S:
        return False
    gc.collect()
    _last_full = time.monotonic()
    return True
