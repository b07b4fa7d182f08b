"""``transport: sdk``: AutoGen's ``OpenAIChatCompletionClient`` over the OpenAI SDK, under the lean client's contract.

AutoGen and the SDK keep what they are good at: turning messages, images and tools into a request,
and sending it. What both transports must do alike is ours, and this wrapper is where the SDK is
made to do it (``tests/m3d_agents/backends/transports/test_conformance.py`` holds them to it):

- **Every answer is read by our policy first.** An httpx response hook hands each response to
  :func:`~m3d_agents.backends.transports.retry.answer_of` before the SDK parses it. Left alone, the
  SDK raises ``JSONDecodeError`` (never retried) for a proxy's HTML page sent as JSON, and returns
  the page's text as if it were a completion when it is sent as HTML; it raises its own exception
  types whose text names neither the endpoint nor the problem.
- **Retries are ours** (the SDK's ``max_retries`` is 0): the same statuses, schedule, ``Retry-After``
  cap and last message as the lean client, a 200 that is not JSON is retried like a 502, and a server
  that refuses connections is waited for as long (``restart_wait_s``).
- **The deadline covers a whole attempt** (``asyncio.timeout``): httpx's timeout bounds each read,
  so a server that trickles bytes would never time out.
- **Requests are put in the shape that makes AutoGen's body ours**: system messages merged at the
  front (AutoGen merges only adjacent ones and refuses the rest), ``json_output=<model>`` sent as the
  same raw ``response_format`` (AutoGen would route it through the SDK's beta parser, which rewrites
  the schema), no ``name`` on messages, ``json_output=False`` as no ``response_format``, and create
  arguments the SDK does not know (vLLM's ``top_k``, ``chat_template_kwargs``, ...) sent in the body
  through ``extra_body`` instead of refused.
- **SDK errors become ours** at this boundary: :class:`~m3d_agents.errors.EndpointRefused` for a
  4xx that a retry will not fix, :class:`~m3d_agents.errors.BackendError` for the rest, never with
  the key or an ``Authorization`` header in the text.
- **One SDK client per event loop**: its connection pool cannot outlive the loop it was made in (a
  notebook runs one per cell), so usage totals are kept here, across clients.
- Streaming is one chunk and token counts are estimates, as in the lean client: debates read whole
  turns, and the SDK's token counter looks up OpenAI's tokenizers (a download) for OpenAI's models only.
"""

from __future__ import annotations

import asyncio
import warnings
from typing import Any, Literal, Mapping, Optional, Sequence

import openai
from autogen_core import CancellationToken
from autogen_core.models import (
    CreateResult,
    LLMMessage,
)
from autogen_core.tools import Tool, ToolSchema
from autogen_ext.models.openai import OpenAIChatCompletionClient
from openai.types.chat.completion_create_params import CompletionCreateParamsBase
from pydantic import BaseModel

from m3d_agents.backends.transports.endpoint import EndpointClient
from m3d_agents.backends.transports.retry import (
    TransientFailure,
    answer_of,
    connection_failure,
    declared_length,
    too_large,
    with_retries,
    without_secrets,
)
from m3d_agents.backends.transports.wire import (
    check_sendable,
    completion_problem,
    merged_system_messages,
    not_a_completion,
    read_usage,
    response_format,
)
from m3d_agents.errors import BackendError

SDK_CREATE_ARGS = frozenset(CompletionCreateParamsBase.__annotations__) | {"timeout", "extra_body"}
"""What the SDK's ``create`` takes by name; AutoGen refuses anything else in ``extra_create_args``."""

# AutoGen compares the model name a server answers with its table of OpenAI model names, for cost
# estimates this project does not use; a vLLM or llama.cpp server answers with its own name.
warnings.filterwarnings("ignore", message="Resolved model mismatch", category=UserWarning)


class SdkClient(EndpointClient):
    """AutoGen's ``OpenAIChatCompletionClient``, made to behave like the lean client (see the module's docstring)."""

    def __init__(self, **settings: Any) -> None:
        super().__init__(**settings)
        self._inner: OpenAIChatCompletionClient | None = None
        self._inner_loop: asyncio.AbstractEventLoop | None = None

    def autogen_client(self) -> OpenAIChatCompletionClient:
        """The AutoGen client that serves the running event loop, made on first use in each loop."""
        loop = asyncio.get_running_loop()
        if self._inner is None or self._inner_loop is not loop:
            http_client = openai.DefaultAsyncHttpxClient(event_hooks={"response": [self._read_answer]})
            settings: dict[str, Any] = {
                "model": self.model,
                "base_url": self.base_url,
                "api_key": self._key,
                "timeout": self.timeout_s,
                "max_retries": 0,
                "model_info": self._model_info,
                "include_name_in_message": False,
                "http_client": http_client,
                **self._defaults,
            }
            self._inner = OpenAIChatCompletionClient(**settings)
            self._inner_loop = loop
        return self._inner

    async def _read_answer(self, response: Any) -> None:
        """The response hook: our policy reads the answer before the SDK does (an error here reaches
        :meth:`_attempt` as it is: the SDK passes on what its HTTP client raises, other than its own errors)."""
        await self._read_bounded(response)
        data = answer_of(self.url, response.status_code, response.content, response.headers, self._key)
        problem = completion_problem(data)
        if problem is not None:
            raise not_a_completion(self.url, data, problem, self._key)
        read_usage(data, self.url)

    async def _read_bounded(self, response: Any) -> None:
        """Read the body as ``aread`` would, but no further than ``max_answer_bytes`` (see the lean client)."""
        limit = self.max_answer_bytes
        declared = declared_length(response.headers)
        if declared is not None and declared > limit:
            await response.aclose()
            raise too_large(self.url, limit, declared)
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > limit:
                await response.aclose()
                raise too_large(self.url, limit)
            chunks.append(chunk)
        # What aread() leaves behind, so the SDK reads these bytes rather than the spent stream.
        response._content = b"".join(chunks)

    def _request(
        self,
        messages: Sequence[LLMMessage],
        json_output: Optional[bool | type[BaseModel]],
        extra_create_args: Mapping[str, Any],
    ) -> tuple[list[LLMMessage], dict[str, Any]]:
        check_sendable(messages, self._model_info)
        extra: dict[str, Any] = {}
        wanted = response_format(json_output)
        if wanted is not None:
            extra["response_format"] = wanted
        body_only: dict[str, Any] = {}
        for name, value in self.shaped_args(extra_create_args).items():
            (extra if name in SDK_CREATE_ARGS else body_only)[name] = value
        if body_only:
            extra["extra_body"] = {**extra.get("extra_body", {}), **body_only}
        return merged_system_messages(messages, self._model_info), extra

    async def _attempt(
        self,
        messages: Sequence[LLMMessage],
        tools: Sequence[Tool | ToolSchema],
        tool_choice: Tool | Literal["auto", "required", "none"],
        extra: Mapping[str, Any],
    ) -> CreateResult:
        client = self.autogen_client()
        try:
            async with asyncio.timeout(self.timeout_s):
                return await client.create(messages, tools=tools, tool_choice=tool_choice, extra_create_args=extra)
        except TimeoutError:
            raise TransientFailure(f"timed out after {self.timeout_s:g} s") from None
        except openai.APITimeoutError:
            raise TransientFailure(f"timed out after {self.timeout_s:g} s") from None
        except openai.APIConnectionError as exc:
            if isinstance(exc.__cause__, (TransientFailure, BackendError)):
                raise exc.__cause__ from None
            raise connection_failure(exc.__cause__ or exc, self._key) from None
        except openai.APIStatusError as exc:
            # Only if the hook did not see the response; read outside the handler, so that the SDK's
            # error (whose text holds the server's body) is not chained to ours.
            response = exc.response
        except openai.OpenAIError as exc:
            problem = without_secrets(str(exc), self._key)
            raise BackendError(f"the model endpoint {self.url} sent an answer the SDK cannot read: {problem}") from None
        except ValueError as exc:
            raise BackendError(f"cannot send this request to {self.url}: {without_secrets(str(exc), self._key)}") from None
        answer_of(self.url, response.status_code, response.content, response.headers, self._key)
        raise BackendError(f"the model endpoint {self.url} sent an answer the SDK cannot read (HTTP {response.status_code})")

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
        sent, extra = self._request(messages, json_output, extra_create_args)
        call = with_retries(lambda: self._attempt(sent, tools, tool_choice, extra), url=self.url, max_retries=self.max_retries,
                            restart_wait_s=self.restart_wait_s)
        result = await self._cancellable(call, cancellation_token)
        self._count(result.usage)
        return result

    async def close(self) -> None:
        inner, self._inner = self._inner, None
        if inner is not None and self._same_loop(self._inner_loop):
            await inner.close()

