"""A server that goes away and comes back: the transports' retries, and a response cache that never
answers for weights the server no longer serves.

One server of this module's own is restarted by the tests (a checkpoint folder of its own, so its
weights can be replaced in place, as a user overwrites a training run's output)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path
from typing import Iterator

import pytest
from autogen_core.models import CreateResult, UserMessage

from m3d_agents.backends.config import BackendConfig
from m3d_agents.backends.factory import build_backend
from tests.support.vllm_server import MODEL_NAME, STARTUP_TIMEOUT_S, VllmServer, build_into, require_vllm, tiny_checkpoint

pytestmark = [pytest.mark.vllm, pytest.mark.filterwarnings("ignore:Resolved model mismatch")]

QUESTION = [UserMessage(content="Is the storm picture real?", source="u")]


@pytest.fixture(scope="module")
def restartable(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VllmServer]:
    require_vllm()
    folder = tmp_path_factory.mktemp("restartable") / "checkpoint"
    shutil.copytree(tiny_checkpoint(0), folder)
    server = VllmServer(folder).start()
    try:
        yield server
    finally:
        server.stop()


async def ask(config: BackendConfig) -> CreateResult:
    backend = build_backend(config)
    try:
        return await backend.client.create(QUESTION)
    finally:
        await backend.close()


async def test_both_transports_retry_until_the_server_is_back(restartable: VllmServer) -> None:
    restartable.stop()
    # The calls wait as long as the server may take to be ready (its start-up limit), in time rather than
    # attempts: however slow the machine, they are still waiting when the server is back.
    configs = [BackendConfig(kind="vllm", base_url=restartable.base_url, model=MODEL_NAME, transport=transport,
                             cache=False, max_tokens=16, restart_wait_s=STARTUP_TIMEOUT_S + 60) for transport in ("http", "sdk")]
    # Both start while nothing listens on the port: each attempt is refused until the restart finishes.
    calls = [asyncio.ensure_future(ask(config)) for config in configs]
    await asyncio.sleep(1.0)
    assert not any(call.done() for call in calls)
    await asyncio.to_thread(restartable.start)
    results = await asyncio.gather(*calls)
    assert all(isinstance(r.content, str) and r.usage.prompt_tokens > 0 for r in results)


def served_requests(server: VllmServer) -> float:
    """vLLM's own count of requests it finished (all finish reasons)."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in server.metrics().splitlines()
               if line.startswith("vllm:request_success_total{"))


async def test_new_weights_behind_the_same_name_are_never_answered_from_the_cache(
    restartable: VllmServer, tmp_path: Path
) -> None:
    config = BackendConfig(kind="vllm", base_url=restartable.base_url, model=MODEL_NAME, cache_dir=tmp_path / "cache",
                           max_tokens=16)
    named = config.with_overrides(checkpoint="run-7")
    first = await ask(config)
    await ask(named)
    again = await ask(config)
    assert not first.cached and again.cached and again.content == first.content
    root = restartable.models()["data"][0]["root"]  # type: ignore[index]

    # New weights written over the old ones, the server restarted: same URL, same model name, same path.
    restartable.stop()
    await asyncio.to_thread(build_into, restartable.model, 1)
    await asyncio.to_thread(restartable.start)
    assert restartable.models()["data"][0]["root"] == root  # type: ignore[index]

    before = served_requests(restartable)
    fresh = await ask(config)
    assert not fresh.cached
    assert served_requests(restartable) == before + 1
    assert (await ask(config)).cached, "the new weights' answer is cached in turn"
    # A checkpoint the user names is the user's word: unchanged name, so its old answer stands.
    assert (await ask(named)).cached
