"""The prepared sample of one debate, extended by the protocol's per-seat work when a seat first speaks.

Some protocols need work done on the post before a seat can be prompted (the cascade's image
description, T_image). Doing it when the seat is first asked, not before the chat, means a
debate that ends before that seat speaks never pays for it: a cascade stopped by its text agent
makes no image description, as AgentM3D's gating intends. What one seat's preparation adds is
kept here, so a second seat that needs the same (the cross-modal agent after the image agent)
finds it made.
"""

from __future__ import annotations

import asyncio
from typing import Callable

from debates.debate_engine.config import DebateConfig, SeatConfig
from debates.debate_engine.protocol import DebateProtocol
from m3d_agents.backends.factory import Backend
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.media.images import PreparedSample


class SamplePreparation:
    """One debate's prepared sample, and the protocol's per-seat work on it, done once per need."""

    def __init__(self, protocol: DebateProtocol, config: DebateConfig, prepared: PreparedSample,
                 backend_for: Callable[[SeatConfig], Backend], ledger: UsageLedger) -> None:
        self.prepared = prepared
        self._protocol = protocol
        self._config = config
        self._backend_for = backend_for
        self._ledger = ledger
        self._lock = asyncio.Lock()

    async def for_seat(self, seat: SeatConfig) -> PreparedSample:
        """The prepared sample as ``seat`` is to see it; concurrent seats wait for one another, so
        shared work is done once."""
        async with self._lock:
            self.prepared = await self._protocol.prepare(self._config, seat, self.prepared, self._backend_for, self._ledger)
            return self.prepared
