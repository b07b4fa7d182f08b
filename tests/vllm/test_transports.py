"""Both transports against a real vLLM server: what a stand-in cannot tell us is whether vLLM reads our
requests as we think it does. Text, images as data URLs, JSON schemas enforced by vLLM's grammar, and
``n`` choices of one request, each checked on what the server reports back (its token counts)."""

from __future__ import annotations

import json
from typing import Literal

import pytest
from autogen_core import Image
from autogen_core.models import SystemMessage, UserMessage
from pydantic import BaseModel, Field

from m3d_agents.asking import ask_choices
from m3d_agents.backends.config import BackendConfig
from m3d_agents.backends.factory import Backend, build_backend
from tests.support.paths import EXAMPLE_IMAGE
from tests.support.vllm_server import MODEL_NAME, VllmServer

pytestmark = [pytest.mark.vllm, pytest.mark.filterwarnings("ignore:Resolved model mismatch")]

TRANSPORTS = ["http", "sdk"]
IMAGE_TOKENS = 64 + 2
"""The example image (306 x 306) as this processor sizes it (at most 256 x 256 pixels): 16 x 16 patches of 16
pixels, merged 2 x 2 into 64 tokens, between <|vision_start|> and <|vision_end|>."""


class Finding(BaseModel):
    label: Literal["real", "fake"]
    confidence: float = Field(ge=0, le=1)
    rationale: str = Field(max_length=200)


def backend_for(server: VllmServer, transport: str, **changes: object) -> Backend:
    settings: dict[str, object] = dict(kind="vllm", base_url=server.base_url, model=MODEL_NAME, transport=transport,
                                       cache=False, max_tokens=64, transport_retries=0)
    return build_backend(BackendConfig.model_validate({**settings, **changes}))


QUESTION = [SystemMessage(content="You check posts."), UserMessage(content="Is this caption true? Storm over NYC.", source="u")]


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_text_reaches_the_model_and_usage_is_the_servers(vllm_server: VllmServer, transport: str) -> None:
    backend = backend_for(vllm_server, transport)
    try:
        result = await backend.client.create(QUESTION)
    finally:
        await backend.close()
    assert isinstance(result.content, str)
    assert result.finish_reason in {"stop", "length"}
    # The chat template's markers plus the two messages, as the server's own tokenizer counted them.
    assert result.usage.prompt_tokens > 10 and result.usage.completion_tokens >= 1
    assert backend.client.total_usage().prompt_tokens == result.usage.prompt_tokens


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_an_image_data_url_becomes_image_tokens(vllm_server: VllmServer, transport: str) -> None:
    backend = backend_for(vllm_server, transport)
    text = "What does the picture show?"
    try:
        plain = await backend.client.create([UserMessage(content=[text], source="u")])
        seen = await backend.client.create([UserMessage(content=[text, Image.from_file(EXAMPLE_IMAGE)], source="u")])
    finally:
        await backend.close()
    assert seen.usage.prompt_tokens - plain.usage.prompt_tokens == IMAGE_TOKENS


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_json_schema_is_enforced_by_the_server(vllm_server: VllmServer, transport: str) -> None:
    """Random weights write whatever the grammar allows: a parseable answer proves the schema was applied."""
    backend = backend_for(vllm_server, transport, max_tokens=256)
    try:
        results = [await backend.client.create(QUESTION, **backend.structured_args(Finding)) for _ in range(3)]
    finally:
        await backend.close()
    for result in results:
        assert isinstance(result.content, str) and result.finish_reason == "stop", result.content
        finding = Finding.model_validate(json.loads(result.content))
        assert finding.label in {"real", "fake"}


async def test_n_choices_come_from_one_request_over_http(vllm_server: VllmServer) -> None:
    backend = backend_for(vllm_server, "http", max_tokens=16)
    try:
        single = await backend.client.create(QUESTION)
        choices = await backend.client.create_choices(QUESTION, 3)  # type: ignore[attr-defined]
    finally:
        await backend.close()
    assert len(choices.results) == 3
    # One request: the prompt is counted once, not three times.
    assert choices.usage.prompt_tokens == single.usage.prompt_tokens
    assert choices.usage.completion_tokens >= 3


async def test_n_choices_over_the_sdk_are_n_seeded_calls(vllm_server: VllmServer) -> None:
    backend = backend_for(vllm_server, "sdk", max_tokens=16)
    try:
        single = await backend.client.create(QUESTION)
        answers = await ask_choices(backend.client, QUESTION, str, 3, create_kwargs={"extra_create_args": {"seed": 5}})
    finally:
        await backend.close()
    assert len(answers) == 3 and all(a.ok for a in answers)
    assert backend.client.total_usage().prompt_tokens == 4 * single.usage.prompt_tokens
