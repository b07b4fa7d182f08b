"""vLLM's CPU engine and seeded requests whose prompt is prefilled in chunks.

The defect: with chunked prefill on (vLLM's default), a seeded request whose prefill is split across
steps makes the CPU engine's sampler fail ("CPU Generator does not use offset"); the engine dies and
the server answers every request with a 500 until it exits. The product sends seeds, and parallel
turns of one debate fill a prefill chunk quickly. What the product does about it:

- avoids it: ``scripts/serve-vllm-cpu.sh`` (the documented command, docs/guides/vllm-cpu.md) starts vLLM with
  ``--no-enable-chunked-prefill``, and the same load then succeeds;
- recognises it: vLLM's dead-engine answer is not retried, and the error is one line that names
  the cause and the flag (:class:`m3d_agents.errors.EngineDead`).
"""

from __future__ import annotations

import asyncio
from typing import Iterator

import pytest
from autogen_core.models import UserMessage

from m3d_agents.backends.config import BackendConfig
from m3d_agents.backends.factory import build_backend
from m3d_agents.errors import EngineDead
from tests.support.vllm_server import MODEL_NAME, VllmServer, require_vllm, tiny_checkpoint

pytestmark = [pytest.mark.vllm, pytest.mark.filterwarnings("ignore:Resolved model mismatch")]

PARALLEL = 3
"""Three prompts of about 1,900 tokens arriving together, as a debate's parallel turns do: more than
one step's prefill budget (4,096 tokens on the CPU), so with chunked prefill on, one of them may be
split, depending on when each arrives."""


def long_prompt(k: int) -> list[UserMessage]:
    return [UserMessage(content=" ".join(f"claim{k} part{i}" for i in range(330)), source="u")]


async def send(server: VllmServer, transport: str, prompts: list[list[UserMessage]], seed: int | None = 7) -> list[object]:
    config = BackendConfig(kind="vllm", base_url=server.base_url, model=MODEL_NAME, transport=transport, cache=False,
                           max_tokens=16, seed=seed, transport_retries=4)
    backend = build_backend(config)
    try:
        return list(await asyncio.gather(*(backend.client.create(p) for p in prompts), return_exceptions=True))
    finally:
        await backend.close()


@pytest.fixture
def chunking_server() -> Iterator[VllmServer]:
    """Chunked prefill on (vLLM's default), with a step budget of 512 tokens: every longer prompt is
    chunked, so the crash does not depend on when requests arrive."""
    require_vllm()
    server = VllmServer(tiny_checkpoint(0), extra_args=["--enable-chunked-prefill", "--max-num-batched-tokens", "512"])
    server.start()
    try:
        yield server
    finally:
        server.stop()


async def test_the_dead_engine_is_named_once_not_retried(chunking_server: VllmServer) -> None:
    unseeded = await send(chunking_server, "http", [long_prompt(0)], seed=None)
    assert not isinstance(unseeded[0], BaseException), "chunks alone do not crash it"
    [outcome] = await send(chunking_server, "http", [long_prompt(1)])
    assert "CPU Generator does not use offset" in chunking_server.log_tail(200_000)
    # vLLM's dead-engine 500 is reported at once: retried, it would end as "did not answer after 5 attempts".
    assert isinstance(outcome, EngineDead), outcome
    message = str(outcome)
    assert "\n" not in message
    assert "--no-enable-chunked-prefill" in message and "CPU Generator does not use offset" in message
    assert chunking_server.base_url in message


@pytest.mark.parametrize("transport", ["http", "sdk"])
async def test_the_served_command_avoids_the_crash(vllm_server: VllmServer, transport: str) -> None:
    outcomes = await send(vllm_server, transport, [long_prompt(k) for k in range(PARALLEL)])
    assert not [o for o in outcomes if isinstance(o, BaseException)], outcomes
    assert "CPU Generator" not in vllm_server.log_tail(200_000)
