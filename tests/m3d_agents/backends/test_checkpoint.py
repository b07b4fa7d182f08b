"""The response cache of a vLLM backend is keyed by the checkpoint the server serves, read from the
server itself: other weights behind the same URL and model name never get the old weights' answers.

A loopback stub plays the server's two pages: ``/v1/models`` (the model's ``root``) and ``/metrics``
(``process_start_time_seconds``). The real server is met in ``tests/vllm/test_restart.py``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from autogen_core.models import CreateResult, UserMessage

from m3d_agents.backends.checkpoint import Checkpoint, root_of, server_root, started_of
from m3d_agents.backends.config import BackendConfig
from m3d_agents.backends.factory import build_backend
from m3d_agents.backends.metering import UsageLedger
from tests.support.openai_stub_server import Reply, StubOpenAIServer, completion_body

pytestmark = pytest.mark.filterwarnings("ignore:Resolved model mismatch")


@dataclass
class Served:
    """What the stub says it serves; the tests change it as a restart or new weights would."""

    root: str = "/models/run-1"
    started: float = 1_700_000_000.25
    answer: str = "first weights"


def vllm_like(served: Served) -> StubOpenAIServer:
    def page(path: str) -> Reply:
        if path == "/v1/models":
            return Reply(200, {"object": "list", "data": [{"id": "m", "object": "model", "created": 1, "root": served.root}]})
        if path == "/metrics":
            text = f"# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds {served.started}\n"
            return Reply(200, text.encode(), content_type="text/plain; version=0.0.4")
        return Reply(404, {"detail": "Not Found"})

    return StubOpenAIServer(lambda body, n: (200, completion_body(f"{served.answer} {n}"), 0.0), page)


async def ask(config: BackendConfig) -> CreateResult:
    backend = build_backend(config)
    try:
        return await backend.view(UsageLedger(), "a", "test").create([UserMessage(content="same question", source="u")])
    finally:
        await backend.close()


def config_for(server: StubOpenAIServer, tmp_path: Path, **changes: object) -> BackendConfig:
    return BackendConfig(kind="vllm", base_url=server.base_url, model="m", cache_dir=tmp_path, transport_retries=0,
                         **changes)  # type: ignore[arg-type]


async def test_the_same_server_answers_from_the_cache(tmp_path: Path) -> None:
    served = Served()
    with vllm_like(served) as server:
        config = config_for(server, tmp_path)
        first, again = await ask(config), await ask(config)
    assert (first.cached, again.cached, again.content) == (False, True, "first weights 1")
    assert {"/v1/models", "/metrics"} <= set(server.get_paths)


@pytest.mark.parametrize("change", ["restart", "new folder"])
async def test_other_weights_behind_the_same_name_are_asked_again(tmp_path: Path, change: str) -> None:
    served = Served()
    with vllm_like(served) as server:
        config = config_for(server, tmp_path)
        await ask(config)
        if change == "restart":
            served.started += 60
        else:
            served.root = "/models/run-2"
        served.answer = "second weights"
        after = await ask(config)
    assert not after.cached and after.content == "second weights 2"
    assert len(server.requests) == 2


async def test_a_named_checkpoint_outlives_a_restart_and_asks_the_server_nothing(tmp_path: Path) -> None:
    served = Served()
    with vllm_like(served) as server:
        config = config_for(server, tmp_path, checkpoint="run-1")
        await ask(config)
        served.started += 60
        again = await ask(config)
        renamed = await ask(config.with_overrides(checkpoint="run-2"))
    assert again.cached and not renamed.cached
    assert server.get_paths == []


async def test_a_server_that_publishes_neither_page_is_keyed_by_url_and_model(tmp_path: Path) -> None:
    with StubOpenAIServer(lambda body, n: (200, completion_body(f"answer {n}"), 0.0), lambda path: Reply(404, {})) as server:
        config = config_for(server, tmp_path)
        first, again = await ask(config), await ask(config)
    assert not first.cached and again.cached


def test_what_is_read_from_the_pages() -> None:
    assert root_of({"data": [{"id": "x", "root": "/a"}, {"id": "m", "root": "/b"}]}, "m") == "/b"
    assert root_of({"data": [{"id": "m"}]}, "m") is None and root_of("not json", "m") is None
    assert started_of("python_info 1\nprocess_start_time_seconds 1.79568430329e+09\n") == 1795684303.29
    assert started_of("vllm:num_requests_running 0\n") is None
    assert server_root("http://h:8000/v1/") == "http://h:8000" and server_root("http://h/proxy") == "http://h/proxy"
    assert Checkpoint(root="/a", started=1.0).key() != Checkpoint(root="/a", started=2.0).key()
