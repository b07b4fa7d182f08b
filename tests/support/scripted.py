"""A scripted chat-completion client for tests: answers come from a list or a function of the prompt."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, AsyncGenerator, Callable, Literal, Mapping, Optional, Sequence, Union

from autogen_core import CancellationToken
from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    LLMMessage,
    ModelCapabilities,
    ModelFamily,
    ModelInfo,
    RequestUsage,
)
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel

from m3d_agents.backends.choices import Choices

Responder = Callable[[Sequence[LLMMessage], Mapping[str, Any]], str]


def text_of(messages: Sequence[LLMMessage]) -> str:
    """All text the model was shown, joined; handy for asserting who saw what."""
    parts: list[str] = []
    for m in messages:
        content = getattr(m, "content", "")
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            parts.extend(c for c in content if isinstance(c, str))
    return "\n".join(parts)


@dataclass
class RecordedCall:
    messages: list[LLMMessage]
    kwargs: dict[str, Any]
    started: float = 0.0
    finished: float = 0.0

    @property
    def prompt(self) -> str:
        return text_of(self.messages)


@dataclass
class ScriptedClient(ChatCompletionClient):
    script: list[str] | Responder
    delay_s: float = 0.0
    vision: bool = False
    structured_output: bool = False
    json_output: bool = False
    samples_choices: bool = False
    """Answer several choices per request, as OpenAI and vLLM do (``create_choices``); off, a caller asks once per choice."""
    calls: list[RecordedCall] = field(default_factory=list)

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
        loop = asyncio.get_running_loop()
        call = RecordedCall(list(messages), {"json_output": json_output, **extra_create_args}, started=loop.time())
        self.calls.append(call)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if callable(self.script):
            text = self.script(messages, call.kwargs)
        else:
            if not self.script:
                raise AssertionError("the scripted client ran out of answers")
            text = self.script.pop(0)
        call.finished = loop.time()
        prompt_tokens = max(1, len(text_of(messages)) // 4)
        return CreateResult(
            finish_reason="stop",
            content=text,
            usage=RequestUsage(prompt_tokens=prompt_tokens, completion_tokens=max(1, len(text) // 4)),
            cached=False,
        )

    async def create_choices(
        self,
        messages: Sequence[LLMMessage],
        n: int,
        *,
        json_output: Optional[bool | type[BaseModel]] = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: Optional[CancellationToken] = None,
    ) -> Choices:
        """``n`` answers in one recorded call; choice ``i`` is what a call with the request's seed plus ``i`` would get.

        Billed as a hosted API bills it: the prompt once, the completions of every choice."""
        if not self.samples_choices:
            raise AssertionError("this scripted client answers one choice per request")
        loop = asyncio.get_running_loop()
        call = RecordedCall(list(messages), {"json_output": json_output, **extra_create_args, "n": n}, started=loop.time())
        self.calls.append(call)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        seed = extra_create_args.get("seed")
        texts = []
        for i in range(n):
            kwargs = {**call.kwargs, "seed": (int(seed) + i) % 2**31} if seed is not None else call.kwargs
            if callable(self.script):
                texts.append(self.script(messages, kwargs))
            else:
                if not self.script:
                    raise AssertionError("the scripted client ran out of answers")
                texts.append(self.script.pop(0))
        call.finished = loop.time()
        zero = RequestUsage(prompt_tokens=0, completion_tokens=0)
        usage = RequestUsage(prompt_tokens=max(1, len(text_of(messages)) // 4),
                             completion_tokens=sum(max(1, len(t) // 4) for t in texts))
        return Choices([CreateResult(finish_reason="stop", content=t, usage=zero, cached=False) for t in texts], usage)

    async def create_stream(  # type: ignore[override]
        self, messages: Sequence[LLMMessage], **kwargs: Any
    ) -> AsyncGenerator[Union[str, CreateResult], None]:
        yield await self.create(messages, **kwargs)

    async def close(self) -> None:
        pass

    def actual_usage(self) -> RequestUsage:
        return RequestUsage(prompt_tokens=0, completion_tokens=0)

    def total_usage(self) -> RequestUsage:
        return RequestUsage(prompt_tokens=0, completion_tokens=0)

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []) -> int:
        return len(text_of(messages)) // 4

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []) -> int:
        return 100_000

    @property
    def capabilities(self) -> ModelCapabilities:  # type: ignore[override]
        return ModelCapabilities(vision=self.vision, function_calling=False, json_output=True)  # type: ignore[typeddict-item]

    @property
    def model_info(self) -> ModelInfo:
        return ModelInfo(
            vision=self.vision,
            function_calling=False,
            json_output=self.json_output,
            family=ModelFamily.UNKNOWN,
            structured_output=self.structured_output,
        )


def scripted_backend(client: ScriptedClient, name: str = "scripted", concurrency: int = 64,  # type: ignore[no-untyped-def]
                     grammar: str = "none"):
    """A Backend around a scripted client, for tests that drive agents end to end without a server.

    A script answers as many calls at once as it is given and decodes under no grammar, unless a
    test says otherwise (``grammar="grammar"``: it stands for llama.cpp's server, and a test then
    reads the grammar a call carries)."""
    from m3d_agents.backends.config import BackendConfig, LocalServerSettings
    from m3d_agents.backends.factory import Backend

    config = BackendConfig(kind="local", concurrency=concurrency, cache=False, grammar=grammar,
                           local=LocalServerSettings(slots=concurrency))
    return Backend(name, config, client)
