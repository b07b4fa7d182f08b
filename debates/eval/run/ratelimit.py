"""Requests-per-minute limits per backend, for hosted APIs that bill or throttle by rate.

Every model call of a backend already passes through that backend's semaphore (see
:class:`m3d_agents.backends.metering.MeteredClient`), so the limit is a gate placed in front of
that semaphore: calls are spaced evenly at ``60 / rpm`` seconds, and concurrency stays bounded
by the backend's own ``concurrency`` setting.
"""

from __future__ import annotations

import asyncio
import math
import time
from typing import Any

from m3d_agents.backends.factory import Backend, BackendPool


MIN_RPM = 1.0
MAX_RPM = 1_000_000.0
"""A limit below one request a minute would hold a run for hours per sample; above a million it limits nothing."""


def rate_limit_problem(rpm: float) -> str | None:
    """Why ``rpm`` cannot be a requests-per-minute limit, or None."""
    if not math.isfinite(rpm) or rpm <= 0:
        return "the requests per minute must be a positive number"
    if not MIN_RPM <= rpm <= MAX_RPM:
        return f"the requests per minute must be from {MIN_RPM:g} to {MAX_RPM:g}, not {rpm:g}"
    return None


class RateGate:
    """An async context manager: wait for the next free slot of the rate, then hold the semaphore."""

    def __init__(self, semaphore: asyncio.Semaphore, requests_per_minute: float) -> None:
        self.semaphore = semaphore
        self.interval = 60.0 / requests_per_minute
        self._next = 0.0

    async def __aenter__(self) -> None:
        await self.semaphore.acquire()
        now = time.monotonic()
        slot = max(now, self._next)
        self._next = slot + self.interval
        if slot > now:
            try:
                await asyncio.sleep(slot - now)
            except BaseException:
                self.semaphore.release()
                raise

    async def __aexit__(self, *exc: Any) -> None:
        self.semaphore.release()


class RateLimitedPool(BackendPool):
    """A BackendPool whose named backends keep to a requests-per-minute limit."""

    def __init__(self, *args: Any, rate_limits: dict[str, float] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.rate_limits = rate_limits or {}

    def get(self, name: str, model: str | None = None) -> Backend:
        fresh = (f"{name}:{model}" if model else name) not in self._backends
        backend = super().get(name, model=model)
        if fresh and name in self.rate_limits:
            backend.gate_calls(RateGate(backend.semaphore, self.rate_limits[name]))
        return backend
