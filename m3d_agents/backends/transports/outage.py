"""A model server that refuses connections: how long a call waits for it, who is told, and why that
wait is not counted against the call's deadline.

A refused connection means that nothing listens at the endpoint's address yet: a server starting,
restarting, or still loading its weights before it opens its port (vLLM binds its port only once its
engine is up, which takes minutes for 8B weights on a GPU, and longer on a loaded CPU). Retries
counted in attempts (``transport_retries``) give up after their backoff, about seventy seconds for
twelve of them, whatever the machine; so refused connections are retried for a time instead, the
backend's ``restart_wait_s``, polled with backoff so that the server is used within seconds of
coming up. The wait is the server's absence, not a slow answer, so it does not count against
``deadline_s``: the call's deadline (:class:`~m3d_agents.backends.metering.MeteredClient`) is pushed
back by every pause spent waiting.

The user is told while calls wait, once per endpoint and then every :data:`REMIND_S` seconds, and
again when the server answers: through the run's notes where a run listens for them
(:func:`notes_to`; ``m3d evaluate`` prints them as they come), else as a warning in the log, which
every command prints on stderr.
"""

from __future__ import annotations

import asyncio
import logging
import time
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Callable, Iterator

from m3d_agents.errors import BackendError

log = logging.getLogger(__name__)

DEFAULT_RESTART_WAIT_S = 300.0
"""Five minutes: what a vLLM server takes to load 8B weights and capture its graphs on a GPU (one to
three minutes), with room for a machine that other jobs share."""

REMIND_S = 30.0
"""How often a note says that calls are still waiting for the same endpoint."""

POLL_S = 5.0
"""The longest pause between two tries while a server refuses connections: it is used within seconds of coming up."""

_notes: ContextVar[Callable[[str], None] | None] = ContextVar("m3d_outage_notes", default=None)
_deadline: ContextVar[Callable[[float], None] | None] = ContextVar("m3d_outage_deadline", default=None)


@contextmanager
def notes_to(note: Callable[[str], None] | None) -> Iterator[None]:
    """Within this block (and the tasks it starts), lines about a server that refuses connections go to ``note``."""
    token = _notes.set(note)
    try:
        yield
    finally:
        _notes.reset(token)


@contextmanager
def waits_extend(deadline: asyncio.Timeout) -> Iterator[None]:
    """Within this block, each pause spent waiting for a refusing server pushes ``deadline`` back by as long."""

    def extend(seconds: float) -> None:
        when = deadline.when()
        if when is not None and not deadline.expired():
            deadline.reschedule(when + seconds)

    token = _deadline.set(extend)
    try:
        yield
    finally:
        _deadline.reset(token)


def tell(line: str) -> None:
    """``line`` to the run's notes, else to the log as a warning."""
    note = _notes.get()
    if note is not None:
        note(line)
    else:
        log.warning("%s", line)


@dataclass
class _Endpoint:
    """One endpoint's current outage, as every call in this process sees it."""

    since: float
    told: float


_outages: dict[str, _Endpoint] = {}
"""Endpoints that refuse connections now, by URL: one note for all the calls that wait on one server."""


@dataclass
class Outage:
    """One call's wait for an endpoint that refuses connections (made at its first refusal)."""

    url: str
    budget_s: float
    began: float = field(default_factory=time.monotonic)
    tries: int = 0

    def __post_init__(self) -> None:
        now = time.monotonic()
        endpoint = _outages.get(self.url)
        if endpoint is None:
            _outages[self.url] = _Endpoint(since=now, told=now)
            tell(f"the model endpoint {self.url} refuses connections (nothing listens there yet: a server starting or "
                 f"restarting); calls wait for it, up to {self.budget_s:g} s each (the backend's restart_wait_s)")

    async def wait(self, backoff: Callable[[int], float]) -> None:
        """Pause before the next try, or raise :class:`~m3d_agents.errors.BackendError` once the budget is spent."""
        now = time.monotonic()
        left = self.budget_s - (now - self.began)
        if left <= 0:
            _outages.pop(self.url, None)
            raise BackendError(
                f"the model endpoint {self.url} refused connections for {self.budget_s:g} s (the backend's "
                "restart_wait_s): is its server running at that address?")
        endpoint = _outages.setdefault(self.url, _Endpoint(since=self.began, told=now))
        if now - endpoint.told >= REMIND_S:
            endpoint.told = now
            tell(f"still waiting for the model endpoint {self.url}: it has refused connections for "
                 f"{now - endpoint.since:.0f} s (each call waits up to {self.budget_s:g} s, restart_wait_s)")
        self.tries += 1
        pause = min(backoff(self.tries), POLL_S, left)
        extend = _deadline.get()
        if extend is not None:
            extend(pause)
        await asyncio.sleep(pause)

    def answered(self) -> None:
        """The server answered this call: the outage is over, and whoever waited is told once."""
        endpoint = _outages.pop(self.url, None)
        if endpoint is not None:
            tell(f"the model endpoint {self.url} answers again, after {time.monotonic() - endpoint.since:.0f} s "
                 "of refused connections")
