"""Helpers for debate tests: a post, a scripted answer, and a pool that gives every seat its own scripted backend."""

from __future__ import annotations

from typing import Any, Callable, Mapping

from debates.debate_engine.config import DebateConfig
from m3d_agents.backends.factory import BackendPool
from m3d_agents.sample import Sample
from tests.support.paths import EXAMPLE_IMAGE
from tests.support.scripted import ScriptedClient, scripted_backend

SAMPLE = Sample(text="Storm clouds over the Statue of Liberty during Hurricane Sandy", images=[EXAMPLE_IMAGE])


def answer(label: str, marker: str = "", confidence: float | None = None) -> str:
    tail = f"\nCONFIDENCE: {confidence}" if confidence is not None else ""
    return f"{marker} I looked at the post. FINAL ANSWER: {label}{tail}"


def seat_pool(config: DebateConfig, scripts: Mapping[str, list[str] | Callable[..., str]], **kw: Any) -> tuple[DebateConfig, BackendPool, dict[str, ScriptedClient]]:
    """Give every seat its own scripted backend so each test can script and inspect seats separately."""
    config = config.model_copy(deep=True)
    pool = BackendPool()
    clients: dict[str, ScriptedClient] = {}
    for seat in config.seats:
        seat.backend = f"b_{seat.name}"
        script = scripts.get(seat.name, [])
        clients[seat.name] = ScriptedClient(list(script) if isinstance(script, list) else script, **kw)
        pool.add(scripted_backend(clients[seat.name], name=seat.backend))
    return config, pool, clients


def prompts_of(client: ScriptedClient) -> list[str]:
    return [call.prompt for call in client.calls]
