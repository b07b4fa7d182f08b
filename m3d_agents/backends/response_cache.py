"""The response cache: AutoGen's, plus several choices per request.

Why a subclass: AutoGen's cache wraps a client and forwards only ``create``, so a cached backend
would hide that its client can answer several choices in one request
(:mod:`m3d_agents.backends.choices`), and a search would pay for its shared prompt once per
choice. The n choices of one request are cached together, under the request and its ``n``.

Each key also holds the served checkpoint where a probe can read it
(:mod:`m3d_agents.backends.checkpoint`): other weights behind the same URL and model name never get
the old weights' answers. When the probe cannot reach the server, the call goes to the client
uncached (it will fail or succeed on its own) and nothing is stored.
"""

from __future__ import annotations

from typing import Any, AsyncGenerator, Literal, Mapping, Optional, Sequence, Union

from autogen_core import CacheStore, CancellationToken
from autogen_core.models import ChatCompletionClient, CreateResult, LLMMessage, RequestUsage
from autogen_core.tools import Tool, ToolSchema
from autogen_ext.models.cache import CHAT_CACHE_VALUE_TYPE, ChatCompletionCache
from pydantic import BaseModel

from m3d_agents.backends.checkpoint import CheckpointProbe
from m3d_agents.backends.choices import Choices, can_sample_choices

CHECKPOINT_ARG = "m3d_checkpoint"
"""Where the served checkpoint enters a key: beside the request's create arguments, in the key only."""


class ResponseCache(ChatCompletionCache):
    def __init__(
        self, client: ChatCompletionClient, store: CacheStore[CHAT_CACHE_VALUE_TYPE], probe: CheckpointProbe | None = None
    ) -> None:
        super().__init__(client, store)
        self.probe = probe
        self._checkpoint: str | None = None

    @property
    def samples_choices(self) -> bool:
        return can_sample_choices(self.client)

    async def _served(self) -> bool:
        """Read the served checkpoint into the key; False when the server cannot say now (skip the cache)."""
        if self.probe is None:
            return True
        checkpoint = await self.probe.current()
        if checkpoint is None:
            return False
        self._checkpoint = checkpoint.key()
        return True

    def _check_cache(
        self,
        messages: Sequence[LLMMessage],
        tools: Sequence[Tool | ToolSchema],
        json_output: Optional[bool | type[BaseModel]],
        extra_create_args: Mapping[str, Any],
    ) -> tuple[Optional[Union[CreateResult, list[Union[str, CreateResult]]]], str]:
        if self.probe is not None:
            extra_create_args = {**extra_create_args, CHECKPOINT_ARG: self._checkpoint}
        return super()._check_cache(messages, tools, json_output, extra_create_args)

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
        arguments: dict[str, Any] = dict(tools=tools, tool_choice=tool_choice, json_output=json_output,
                                         extra_create_args=extra_create_args, cancellation_token=cancellation_token)
        if not await self._served():
            return await self.client.create(messages, **arguments)
        return await super().create(messages, **arguments)

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
        arguments: dict[str, Any] = dict(tools=tools, tool_choice=tool_choice, json_output=json_output,
                                         extra_create_args=extra_create_args, cancellation_token=cancellation_token,
                                         include_usage=include_usage)
        stream = super().create_stream(messages, **arguments) if await self._served() else \
            self.client.create_stream(messages, **arguments)
        async for chunk in stream:
            yield chunk

    async def create_choices(
        self,
        messages: Sequence[LLMMessage],
        n: int,
        *,
        json_output: Optional[bool | type[BaseModel]] = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: Optional[CancellationToken] = None,
    ) -> Choices:
        """The stored choices of this request, or the client's (stored when it returned all ``n``).

        The request's usage is kept on the first stored choice, so a hit reports what the request cost."""
        client: Any = self.client
        if not await self._served():
            return await client.create_choices(
                messages, n, json_output=json_output, extra_create_args=extra_create_args, cancellation_token=cancellation_token,
            )
        stored, key = self._check_cache(messages, [], json_output, {**extra_create_args, "n": n})
        if isinstance(stored, list) and stored and all(isinstance(item, CreateResult) for item in stored):
            results = [item for item in stored if isinstance(item, CreateResult)]
            usage = RequestUsage(prompt_tokens=sum(r.usage.prompt_tokens for r in results),
                                 completion_tokens=sum(r.usage.completion_tokens for r in results))
            zero = RequestUsage(prompt_tokens=0, completion_tokens=0)
            return Choices([r.model_copy(update={"cached": True, "usage": zero}) for r in results], usage, cached=True)
        choices: Choices = await client.create_choices(
            messages, n, json_output=json_output, extra_create_args=extra_create_args, cancellation_token=cancellation_token,
        )
        if len(choices.results) == n:
            carried = [r.model_copy(update={"usage": choices.usage if i == 0 else RequestUsage(prompt_tokens=0, completion_tokens=0)})
                       for i, r in enumerate(choices.results)]
            self.store.set(key, list(carried))
        return choices
