"""Which weights a vLLM server is serving, as far as the server can say: part of the response cache's key.

Why: a model name says nothing about the weights behind it. A user who trains a new checkpoint,
writes it over the old folder and restarts vLLM under the same ``--served-model-name`` gets the
same URL and model name, so a cache keyed on those alone answers from the old weights. Nothing vLLM
publishes hashes the weights (``/v1/models``' ``created`` is the time of the request, and the
``system_fingerprint`` of an answer hashes the engine's configuration, in which the model is a
path). What does change whenever the weights can change is the server process: vLLM loads weights
once, when it starts (reloading them in place needs its development endpoints), so a new
checkpoint always means a new process. The key therefore holds:

- ``root``: the model's path or repository, from ``GET /v1/models``;
- ``started``: when the server process started, ``process_start_time_seconds`` in ``GET /metrics``.

The price is that a restart with the same weights starts a fresh store. A user who wants answers to
outlive restarts names the weights instead (a backend's ``checkpoint:``, e.g. a training run's id):
that name replaces what the server says, and changing it is then the user's promise to keep.
A server that publishes neither (not vLLM) is keyed by its URL and model name only, as before.

The identity is read on first use and again at most every :data:`REFRESH_S` seconds, well under
the time any vLLM server takes to restart, so answers of a server that went down and came back
with other weights are never mixed with the new ones.
"""

from __future__ import annotations

import asyncio
import re
import time
from typing import Any

import aiohttp
from pydantic import BaseModel, ConfigDict, Field

from m3d_agents.backends.transports.lean_http import env_proxy
from m3d_agents.safe_json import loads_bounded

PROBE_MAX_BYTES = 4 * 1024 * 1024
"""The most read of ``/v1/models`` or ``/metrics``; a larger answer says nothing about the checkpoint."""

REFRESH_S = 5.0
"""How long a read identity is trusted: shorter than any vLLM restart (the 1 M-parameter test model takes 20 s)."""

_STARTED = re.compile(r"^process_start_time_seconds\s+([0-9.eE+-]+)\s*$", re.MULTILINE)


class Checkpoint(BaseModel):
    """What a server says about the weights behind a model name (None where it says nothing)."""

    model_config = ConfigDict(frozen=True)

    root: str | None = Field(None, description="the served model's path or repository (``root`` in /v1/models)")
    started: float | None = Field(None, description="when the server process started (process_start_time_seconds in /metrics)")

    def key(self) -> str:
        return f"{self.root}@{self.started}"


def server_root(base_url: str) -> str:
    """The server's own root for ``/metrics``: an OpenAI base URL ends in ``/v1``."""
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


def root_of(models: Any, model: str) -> str | None:
    """The ``root`` of ``model`` in a ``/v1/models`` answer, or None where the server gives none."""
    data = models.get("data") if isinstance(models, dict) else None
    for card in data if isinstance(data, list) else []:
        if isinstance(card, dict) and card.get("id") == model and isinstance(card.get("root"), str):
            return str(card["root"])
    return None


def started_of(metrics: str) -> float | None:
    match = _STARTED.search(metrics)
    try:
        return float(match.group(1)) if match else None
    except ValueError:
        return None


class CheckpointProbe:
    """Reads a server's :class:`Checkpoint`, and remembers it for :data:`REFRESH_S` seconds."""

    def __init__(self, base_url: str, model: str, api_key: str | None, refresh_s: float = REFRESH_S) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.refresh_s = refresh_s
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._known: Checkpoint | None = None
        self._read_at = float("-inf")

    async def current(self) -> Checkpoint | None:
        """The server's checkpoint now; None when the server cannot be reached (then nothing is cached)."""
        if self._known is not None and time.monotonic() - self._read_at < self.refresh_s:
            return self._known
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10)) as session:
                models = await self._get(session, self.base_url + "/models")
                metrics = await self._get(session, server_root(self.base_url) + "/metrics")
        except (aiohttp.ClientError, asyncio.TimeoutError):
            self._known = None
            return None
        checkpoint = Checkpoint(
            root=root_of(models, self.model) if not isinstance(models, str) else None,
            started=started_of(metrics) if isinstance(metrics, str) else None,
        )
        self._known, self._read_at = checkpoint, time.monotonic()
        return checkpoint

    async def _get(self, session: aiohttp.ClientSession, url: str) -> Any:
        """The parsed JSON, or the text, of a 200 answer; None for any other status (the server has no such page)."""
        async with session.get(url, headers=self._headers, proxy=env_proxy(url)) as response:
            if response.status != 200:
                return None
            # Bounded like a model's answer: a server's metrics page is kilobytes, never worth gigabytes of memory.
            raw = await response.content.read(PROBE_MAX_BYTES + 1)
            if len(raw) > PROBE_MAX_BYTES:
                return None
            text = raw.decode(response.charset or "utf-8", errors="replace")
        if "json" in response.headers.get("Content-Type", ""):
            try:
                return loads_bounded(text)
            except ValueError:
                return None
        return text
