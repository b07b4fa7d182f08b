"""What both transports are apart from how they send a request: an OpenAI-compatible endpoint
with its settings, usage totals, token estimates, capabilities, cancellation and a stream of one chunk.

Keeping this in one base class means the two transports differ only where they must (the HTTP
library and how the SDK is steered), which is what the conformance suite checks.
"""

from __future__ import annotations

import asyncio
from abc import abstractmethod
from typing import Any, AsyncGenerator, Awaitable, Literal, Mapping, Optional, Sequence, TypeVar, Union

from autogen_core import CancellationToken
from autogen_core.models import ChatCompletionClient, CreateResult, LLMMessage, ModelCapabilities, ModelInfo, RequestUsage
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel

from m3d_agents.backends.transports.outage import DEFAULT_RESTART_WAIT_S
from m3d_agents.backends.transports.retry import DEFAULT_MAX_ANSWER_BYTES, NO_KEY
from m3d_agents.backends.transports.shaping import NO_SHAPING, RequestShaping
from m3d_agents.backends.transports.wire import added, estimated_tokens
from m3d_agents.errors import BackendError

T = TypeVar("T")


class EndpointClient(ChatCompletionClient):
    """An OpenAI-compatible chat-completions endpoint seen through AutoGen's client interface."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        model_info: ModelInfo,
        api_key: str | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        seed: int | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 3,
        restart_wait_s: float = DEFAULT_RESTART_WAIT_S,
        context_window: int | None = None,
        shaping: RequestShaping = NO_SHAPING,
        max_answer_bytes: int = DEFAULT_MAX_ANSWER_BYTES,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.url = self.base_url + "/chat/completions"
        self.model = model
        self._model_info = model_info
        self._key = api_key or NO_KEY
        self._defaults: dict[str, Any] = {
            k: v for k, v in (("temperature", temperature), ("max_tokens", max_tokens), ("seed", seed)) if v is not None
        }
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.restart_wait_s = restart_wait_s
        self.context_window = context_window
        self.shaping = shaping
        self.max_answer_bytes = max_answer_bytes
        self._actual = RequestUsage(prompt_tokens=0, completion_tokens=0)
        self._total = RequestUsage(prompt_tokens=0, completion_tokens=0)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, model={self.model!r})"

    def shaped_args(self, extra_create_args: Mapping[str, Any]) -> dict[str, Any]:
        """A call's extra arguments as this server takes them (:mod:`~m3d_agents.backends.transports.shaping`)."""
        return self.shaping.shaped(extra_create_args, self._defaults.get("max_tokens"))

    def _count(self, usage: RequestUsage) -> None:
        self._actual = added(self._actual, usage)
        self._total = added(self._total, usage)

    @staticmethod
    async def _cancellable(call: Awaitable[T], cancellation_token: Optional[CancellationToken]) -> T:
        """Await ``call``; a cancelled token stops it at once, even in the middle of a backoff wait."""
        if cancellation_token is None:
            return await call
        request = asyncio.ensure_future(call)
        cancellation_token.link_future(request)
        return await request

    @staticmethod
    def _same_loop(made_in: asyncio.AbstractEventLoop | None) -> bool:
        """Whether a resource made in ``made_in`` can be closed from here (it cannot from another loop)."""
        try:
            return asyncio.get_running_loop() is made_in
        except RuntimeError:
            return made_in is None

    @abstractmethod
    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = [],
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: Optional[bool | type[BaseModel]] = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: Optional[CancellationToken] = None,
    ) -> CreateResult: ...

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

    def actual_usage(self) -> RequestUsage:
        return self._actual

    def total_usage(self) -> RequestUsage:
        return self._total

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []) -> int:
        """An estimate (four characters a token): the server's tokenizer is not available to the client."""
        return estimated_tokens(messages, tools, self._model_info)

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
