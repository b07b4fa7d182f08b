"""An AutoGen chat-completion client that speaks the OpenAI HTTP API itself, over one pooled session.

Why not the OpenAI SDK underneath: its request transformation and response models cost about
5 ms of CPU per call on a small machine, several times what a debate turn's own bookkeeping costs.
In a batch run against a fast vLLM server that CPU, not the model, bounds throughput
(``benchmarks/throughput.py`` measures both paths). This client sends the JSON body as it is and
reads the answer as plain JSON. What it shares with ``transport: sdk``
(:mod:`~m3d_agents.backends.transports.sdk`) lives in two modules both use: the wire format
(:mod:`~m3d_agents.backends.transports.wire`) and the retry policy
(:mod:`~m3d_agents.backends.transports.retry`): retries with backoff on 408, 409, 429, 5xx,
bodies that are not JSON, connection errors and timeouts, honouring ``Retry-After``, and a server
that refuses connections waited for (:mod:`~m3d_agents.backends.transports.outage`).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any, Literal, Mapping, Optional, Sequence
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

import aiohttp
from autogen_core import CancellationToken
from autogen_core.models import (
    CreateResult,
    LLMMessage,
    RequestUsage,
)
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel

from m3d_agents.backends.choices import Choices
from m3d_agents.backends.transports.endpoint import EndpointClient
from m3d_agents.backends.transports.retry import (
    TransientFailure,
    answer_of,
    connection_failure,
    declared_length,
    too_large,
    with_retries,
)
from m3d_agents.backends.transports.wire import (
    openai_messages,
    read_choices,
    read_completion,
    response_format,
    tool_choice_spec,
    tool_specs,
)


KEEPALIVE_S = 4.0
"""How long an idle connection is kept for the next request: less than the 5 s after which vLLM's server
(uvicorn, ``VLLM_HTTP_TIMEOUT_KEEP_ALIVE``) closes it. Kept longer, a request sent on a connection the
server is closing fails to write its body, and costs a retry and its backoff."""


class OpenAICompatibleClient(EndpointClient):
    """``transport: http``: the default, and the cheapest per call (see the module's docstring)."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self._headers = {"Authorization": f"Bearer {self._key}", "Content-Type": "application/json"}
        self._timeout = aiohttp.ClientTimeout(total=self.timeout_s)
        self._proxy = env_proxy(self.base_url)
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None

    def _current_session(self) -> aiohttp.ClientSession:
        """One session per event loop: a session cannot outlive the loop it was made in (a notebook runs many)."""
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._session_loop is not loop:
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=KEEPALIVE_S)
            self._session = aiohttp.ClientSession(connector=connector, timeout=self._timeout)
            self._session_loop = loop
        return self._session

    def request_body(
        self,
        messages: Sequence[LLMMessage],
        tools: Sequence[Tool | ToolSchema],
        tool_choice: Tool | Literal["auto", "required", "none"],
        json_output: Optional[bool | type[BaseModel]],
        extra_create_args: Mapping[str, Any],
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model, "messages": openai_messages(messages, self._model_info), "stream": False, **self._defaults
        }
        wanted = response_format(json_output)
        if wanted is not None:
            body["response_format"] = wanted
        if tools:
            body["tools"] = tool_specs(tools)
            body["tool_choice"] = tool_choice_spec(tool_choice)
        body.update(self.shaped_args(extra_create_args))
        return body

    async def _post(self, payload: bytes) -> Any:
        """The parsed answer to one request body, with retries (see :func:`~m3d_agents.backends.transports.retry.with_retries`)."""
        return await with_retries(lambda: self._attempt(payload), url=self.url, max_retries=self.max_retries,
                                  restart_wait_s=self.restart_wait_s)

    async def _attempt(self, payload: bytes) -> Any:
        try:
            async with self._current_session().post(self.url, data=payload, headers=self._headers, proxy=self._proxy) as response:
                raw = await self._bounded_body(response)
                return answer_of(self.url, response.status, raw, response.headers, self._key)
        except asyncio.TimeoutError:
            raise TransientFailure(f"timed out after {self.timeout_s:g} s") from None
        except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
            raise connection_failure(exc, self._key) from None

    async def _bounded_body(self, response: aiohttp.ClientResponse) -> bytes:
        """The body, read no further than ``max_answer_bytes``: an endless or huge answer is refused
        (:class:`~m3d_agents.errors.AnswerRefused`) once it passes the limit, not read to the end."""
        limit = self.max_answer_bytes
        declared = declared_length(response.headers)
        if declared is not None and declared > limit:
            raise too_large(self.url, limit, declared)
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.content.iter_chunked(1 << 16):
            size += len(chunk)
            if size > limit:
                raise too_large(self.url, limit)
            chunks.append(chunk)
        return b"".join(chunks)

    async def _send(self, body: dict[str, Any], cancellation_token: Optional[CancellationToken]) -> Any:
        return await self._cancellable(self._post(json.dumps(body).encode()), cancellation_token)

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = [],
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: Optional[bool | type[BaseModel]] = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: Optional[CancellationToken] = None,
    ) -> CreateResult:
        body = self.request_body(messages, tools, tool_choice, json_output, extra_create_args)
        data = await self._send(body, cancellation_token)
        content, reason, usage, thought = read_completion(data, self.url, self._key)
        self._count(usage)
        return CreateResult(finish_reason=reason, content=content, usage=usage, cached=False, thought=thought)

    samples_choices = True
    """OpenAI and vLLM answer ``n`` choices per request; a server that ignores ``n`` answers once, and the caller asks again."""

    async def create_choices(
        self,
        messages: Sequence[LLMMessage],
        n: int,
        *,
        json_output: Optional[bool | type[BaseModel]] = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: Optional[CancellationToken] = None,
    ) -> Choices:
        """Up to ``n`` answers from one request (``"n": n`` in the body): the prompt is sent and billed once."""
        body = self.request_body(messages, [], "auto", json_output, {**extra_create_args, "n": n})
        data = await self._send(body, cancellation_token)
        choices, usage = read_choices(data, self.url, self._key)
        self._count(usage)
        zero = RequestUsage(prompt_tokens=0, completion_tokens=0)
        results = [
            CreateResult(finish_reason=reason, content=content, usage=zero, cached=False, thought=thought)
            for content, reason, thought in choices[:n]
        ]
        return Choices(results=results, usage=usage)

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed and self._same_loop(self._session_loop):
            await session.close()


def env_proxy(url: str) -> str | None:
    """The proxy that ``HTTP(S)_PROXY`` and ``NO_PROXY`` name for an endpoint, looked up once.

    aiohttp's ``trust_env`` looks it up (and reads ``~/.netrc``) in a worker thread on every request,
    two thread hops per model call.
    """
    parts = urlsplit(url)
    if not parts.hostname or proxy_bypass(parts.hostname):
        return None
    return getproxies().get(parts.scheme)
