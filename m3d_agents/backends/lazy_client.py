"""A client that is built on its first real call.

The embedded backend has to start a llama.cpp server before its client can exist. Building the
client lazily means a run answered entirely from the response cache never starts the server.
"""

from __future__ import annotations

import asyncio
from typing import Any, AsyncGenerator, Callable, Literal, Mapping, Optional, Sequence, Union

from autogen_core import CancellationToken
from autogen_core.models import ChatCompletionClient, CreateResult, LLMMessage, ModelCapabilities, ModelInfo, RequestUsage
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel


class LazyClient(ChatCompletionClient):
    def __init__(self, build: Callable[[], ChatCompletionClient], model_info: ModelInfo) -> None:
        self._build = build
        self._model_info = model_info
        self._client: ChatCompletionClient | None = None
        self._lock = asyncio.Lock()

    @property
    def built(self) -> bool:
        """Whether the real client exists (for the embedded backend: whether its server has been started)."""
        return self._client is not None

    @property
    def client(self) -> ChatCompletionClient:
        if self._client is None:
            self._client = self._build()
        return self._client

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
        if self._client is None:
            async with self._lock:
                if self._client is None:
                    self._client = await asyncio.to_thread(self._build)
        return await self.client.create(
            messages, tools=tools, tool_choice=tool_choice, json_output=json_output,
            extra_create_args=extra_create_args, cancellation_token=cancellation_token,
        )

    def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = [],
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: Optional[bool | type[BaseModel]] = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: Optional[CancellationToken] = None,
    ) -> AsyncGenerator[Union[str, CreateResult], None]:
        return self.client.create_stream(
            messages, tools=tools, tool_choice=tool_choice, json_output=json_output,
            extra_create_args=extra_create_args, cancellation_token=cancellation_token,
        )

    async def close(self) -> None:
        if self._client is not None:
            await self._client.close()

    def actual_usage(self) -> RequestUsage:
        return self.client.actual_usage() if self._client else RequestUsage(prompt_tokens=0, completion_tokens=0)

    def total_usage(self) -> RequestUsage:
        return self.client.total_usage() if self._client else RequestUsage(prompt_tokens=0, completion_tokens=0)

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []) -> int:
        return self.client.count_tokens(messages, tools=tools)

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []) -> int:
        return self.client.remaining_tokens(messages, tools=tools)

    @property
    def capabilities(self) -> ModelCapabilities:
        return self._model_info

    @property
    def model_info(self) -> ModelInfo:
        return self._model_info
