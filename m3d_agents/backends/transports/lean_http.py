"""An AutoGen chat-completion client that speaks the OpenAI HTTP API itself, over one pooled session.

Why not the OpenAI SDK underneath: its request transformation and response models cost about
5 ms of CPU per call on a small machine, several times what a debate turn's own bookkeeping costs.
In a batch run against a fast vLLM server that CPU, not the model, bounds throughput
(``benchmarks/throughput.py`` measures both paths). This client sends the JSON body as it is and
reads the answer as plain JSON; it keeps the SDK's habits that matter: retries with exponential
backoff on 429, 5xx, connection errors and timeouts (honouring ``Retry-After``), a per-request
timeout, a bearer key, and usage totals. ``transport: sdk`` in a backend config selects AutoGen's
``OpenAIChatCompletionClient`` instead.
"""

from __future__ import annotations

import asyncio
import json
import random
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass
from typing import Any, AsyncGenerator, Literal, Mapping, Optional, Sequence, Union

import aiohttp
from autogen_core import CancellationToken, FunctionCall, Image
from autogen_core.models import (
    AssistantMessage,
    ChatCompletionClient,
    CreateResult,
    FinishReasons,
    FunctionExecutionResultMessage,
    LLMMessage,
    ModelCapabilities,
    ModelInfo,
    RequestUsage,
    SystemMessage,
    UserMessage,
)
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel

from m3d_agents.backends.transports.schemas import json_schema_of
from m3d_agents.errors import BackendError

RETRIED_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
FINISH_REASONS: dict[str, FinishReasons] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "function_calls",
    "function_call": "function_calls",
    "content_filter": "content_filter",
}


class EndpointRefused(BackendError):
    """The endpoint answered with an HTTP error that a retry will not fix (a bad request, a wrong key, ...)."""

    def __init__(self, url: str, status: int, message: str) -> None:
        self.status = status
        super().__init__(f"the model endpoint {url} refused the request ({status}): {message}")


def _user_content(message: UserMessage, vision: bool) -> str | list[dict[str, Any]]:
    if isinstance(message.content, str):
        return message.content
    parts: list[dict[str, Any]] = []
    for part in message.content:
        if isinstance(part, str):
            parts.append({"type": "text", "text": part})
        elif isinstance(part, Image):
            if not vision:
                raise BackendError("the model of this backend has no vision, but a message carries an image")
            parts.append(part.to_openai_format())
        else:
            raise BackendError(f"a user message carries a part of unsupported type {type(part).__name__}")
    return parts


def _assistant(message: AssistantMessage) -> dict[str, Any]:
    if isinstance(message.content, str):
        return {"role": "assistant", "content": message.content}
    calls = [
        {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}
        for call in message.content
    ]
    return {"role": "assistant", "content": message.thought, "tool_calls": calls}


def openai_messages(messages: Sequence[LLMMessage], model_info: ModelInfo) -> list[dict[str, Any]]:
    """AutoGen messages as the OpenAI wire format.

    Servers that take one system message (most chat templates of open models) get every system
    message merged, in order, at the front.
    """
    wire: list[dict[str, Any]] = []
    systems: list[str] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            if model_info.get("multiple_system_messages"):
                wire.append({"role": "system", "content": message.content})
            else:
                systems.append(message.content)
        elif isinstance(message, UserMessage):
            wire.append({"role": "user", "content": _user_content(message, bool(model_info.get("vision")))})
        elif isinstance(message, AssistantMessage):
            wire.append(_assistant(message))
        elif isinstance(message, FunctionExecutionResultMessage):
            wire.extend({"role": "tool", "tool_call_id": r.call_id, "content": r.content} for r in message.content)
        else:
            raise BackendError(f"cannot send a message of type {type(message).__name__}")
    if systems:
        wire.insert(0, {"role": "system", "content": "\n\n".join(systems)})
    return wire


def _tool_specs(tools: Sequence[Tool | ToolSchema]) -> list[dict[str, Any]]:
    specs = []
    for tool in tools:
        schema = tool.schema if isinstance(tool, Tool) else tool
        specs.append({"type": "function", "function": dict(schema)})
    return specs


def _tool_choice(choice: Tool | Literal["auto", "required", "none"]) -> Any:
    if isinstance(choice, Tool):
        return {"type": "function", "function": {"name": choice.schema["name"]}}
    return choice


def read_completion(data: Any, url: str) -> tuple[str | list[FunctionCall], FinishReasons, RequestUsage, str | None]:
    """Content, finish reason, usage and reasoning text of a chat-completion body; a clear error if it is not one."""
    try:
        choice = data["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError):
        raise BackendError(f"the model endpoint {url} sent a body that is not a chat completion: {str(data)[:200]}") from None
    usage_data = data.get("usage") or {}
    usage = RequestUsage(
        prompt_tokens=int(usage_data.get("prompt_tokens") or 0),
        completion_tokens=int(usage_data.get("completion_tokens") or 0),
    )
    reason = FINISH_REASONS.get(str(choice.get("finish_reason")), "unknown")
    thought = message.get("reasoning_content") or None
    calls = message.get("tool_calls") or []
    if calls:
        content: str | list[FunctionCall] = [
            FunctionCall(id=str(c.get("id", "")), name=c["function"]["name"], arguments=c["function"].get("arguments") or "{}")
            for c in calls
        ]
        return content, "function_calls", usage, message.get("content") or thought
    return message.get("content") or "", reason, usage, thought


class OpenAICompatibleClient(ChatCompletionClient):
    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        model_info: ModelInfo,
        api_key: str = "EMPTY",
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 3,
        context_window: int | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._model_info = model_info
        self._headers = {"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"}
        self._defaults: dict[str, Any] = {
            k: v for k, v in (("temperature", temperature), ("max_tokens", max_tokens), ("seed", seed)) if v is not None
        }
        self._timeout = aiohttp.ClientTimeout(total=timeout_s)
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.context_window = context_window
        self._proxy = env_proxy(self.base_url)
        self._session: aiohttp.ClientSession | None = None
        self._session_loop: asyncio.AbstractEventLoop | None = None
        self._actual = RequestUsage(prompt_tokens=0, completion_tokens=0)
        self._total = RequestUsage(prompt_tokens=0, completion_tokens=0)

    def _current_session(self) -> aiohttp.ClientSession:
        """One session per event loop: a session cannot outlive the loop it was made in (a notebook runs many)."""
        loop = asyncio.get_running_loop()
        if self._session is None or self._session.closed or self._session_loop is not loop:
            connector = aiohttp.TCPConnector(limit=0, keepalive_timeout=30)
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
        body: dict[str, Any] = {"model": self.model, "messages": openai_messages(messages, self._model_info), **self._defaults}
        if json_output is True:
            body["response_format"] = {"type": "json_object"}
        elif isinstance(json_output, type) and issubclass(json_output, BaseModel):
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {"name": json_output.__name__, "schema": json_schema_of(json_output)},
            }
        if tools:
            body["tools"] = _tool_specs(tools)
            body["tool_choice"] = _tool_choice(tool_choice)
        body.update(extra_create_args)
        return body

    async def _post(self, payload: bytes) -> Any:
        url = self.base_url + "/chat/completions"
        problem, retry_after = "", None
        for attempt in range(self.max_retries + 1):
            if attempt:
                await asyncio.sleep(backoff_s(attempt, retry_after))
            retry_after = None
            try:
                async with self._current_session().post(url, data=payload, headers=self._headers, proxy=self._proxy) as response:
                    raw = await response.read()
                    if response.status == 200:
                        try:
                            return json.loads(raw)
                        except ValueError:
                            raise BackendError(f"the model endpoint {url} sent a body that is not JSON: {raw[:200]!r}") from None
                    message = _error_message(raw)
                    if response.status not in RETRIED_STATUSES:
                        raise EndpointRefused(url, response.status, message)
                    problem = f"HTTP {response.status}: {message}"
                    retry_after = _seconds(response.headers.get("Retry-After"))
            except asyncio.TimeoutError:
                problem = f"timed out after {self.timeout_s:g} s"
            except (aiohttp.ClientConnectionError, aiohttp.ClientPayloadError) as exc:
                problem = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        attempts = self.max_retries + 1
        raise BackendError(
            f"the model endpoint {url} did not answer after {attempts} attempt{'s' if attempts > 1 else ''} ({problem})"
        )

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
        payload = json.dumps(body).encode()
        if cancellation_token is None:
            data = await self._post(payload)
        else:
            request = asyncio.ensure_future(self._post(payload))
            cancellation_token.link_future(request)
            data = await request
        content, reason, usage, thought = read_completion(data, self.base_url)
        self._actual = _added(self._actual, usage)
        self._total = _added(self._total, usage)
        return CreateResult(finish_reason=reason, content=content, usage=usage, cached=False, thought=thought)

    async def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = [],
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: Optional[bool | type[BaseModel]] = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: Optional[CancellationToken] = None,
        include_usage: Optional[bool] = None,
    ) -> AsyncGenerator[Union[str, CreateResult], None]:
        """The whole answer as one chunk, then the result: debates read complete turns, never tokens."""
        result = await self.create(
            messages, tools=tools, tool_choice=tool_choice, json_output=json_output,
            extra_create_args=extra_create_args, cancellation_token=cancellation_token,
        )
        if isinstance(result.content, str) and result.content:
            yield result.content
        yield result

    async def close(self) -> None:
        session, self._session = self._session, None
        if session is not None and not session.closed:
            try:
                running = asyncio.get_running_loop()
            except RuntimeError:
                running = None
            if running is self._session_loop:
                await session.close()

    def actual_usage(self) -> RequestUsage:
        return self._actual

    def total_usage(self) -> RequestUsage:
        return self._total

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []) -> int:
        """An estimate (four characters a token): the server's tokenizer is not available to the client."""
        text = json.dumps(openai_messages(messages, self._model_info)) + json.dumps(_tool_specs(tools))
        return len(text) // 4

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []) -> int:
        if self.context_window is None:
            raise BackendError("the context window of this backend is unknown, so its remaining tokens are too")
        return max(0, self.context_window - self.count_tokens(messages, tools=tools))

    @property
    def capabilities(self) -> ModelCapabilities:
        return ModelCapabilities(
            vision=self._model_info["vision"],
            function_calling=self._model_info["function_calling"],
            json_output=self._model_info["json_output"],
        )

    @property
    def model_info(self) -> ModelInfo:
        return self._model_info


def env_proxy(url: str) -> str | None:
    """The proxy that ``HTTP(S)_PROXY`` and ``NO_PROXY`` name for an endpoint, looked up once.

    aiohttp's ``trust_env`` looks it up (and reads ``~/.netrc``) in a worker thread on every request,
    two thread hops per model call.
    """
    parts = urlsplit(url)
    if not parts.hostname or proxy_bypass(parts.hostname):
        return None
    return getproxies().get(parts.scheme)


def _error_message(raw: bytes) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the start of the body."""
    try:
        data = json.loads(raw)
        error = data.get("error", data) if isinstance(data, dict) else data
        message = error.get("message") if isinstance(error, dict) else error
        return str(message or data)[:300]
    except ValueError:
        return raw[:300].decode("utf-8", "replace")


def backoff_s(attempt: int, retry_after: float | None = None) -> float:
    """The server's own ``Retry-After`` when it gave one (capped at a minute), else exponential backoff with jitter."""
    if retry_after is not None:
        return min(60.0, retry_after)
    return min(8.0, 0.5 * 2 ** (attempt - 1)) * (0.75 + random.random() / 2)


def _seconds(header: str | None) -> float | None:
    try:
        return max(0.0, float(header)) if header is not None else None
    except ValueError:
        return None


def _added(a: RequestUsage, b: RequestUsage) -> RequestUsage:
    return RequestUsage(prompt_tokens=a.prompt_tokens + b.prompt_tokens, completion_tokens=a.completion_tokens + b.completion_tokens)
