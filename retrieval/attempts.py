"""Which errors of a search provider count as that provider failing.

A provider that is refused, times out, answers garbage (``BackendError``) or is asked something it
cannot take (``InputError``) has failed: the caller records the reason and the run goes on with
the other providers. A question that a replayed store never recorded (``StoreMiss``) is the same
kind of failure when the run reports replay misses, and an error otherwise. Anything else is a
bug and propagates.
"""

from __future__ import annotations

from typing import Awaitable, Callable, Literal, TypeVar

from m3d_agents.errors import BackendError, InputError
from retrieval.store import StoreMiss

T = TypeVar("T")
ReplayMisses = Literal["raise", "report"]


async def attempt(work: Callable[[], Awaitable[T]], replay_misses: ReplayMisses) -> T | Exception:
    """The result of ``work``, or the provider failure it raised (returned, for the caller to record)."""
    try:
        return await work()
    except StoreMiss as exc:
        if replay_misses == "raise":
            raise
        return exc
    except (BackendError, InputError) as exc:
        return exc
