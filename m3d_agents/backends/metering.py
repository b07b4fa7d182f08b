"""Per-sample accounting of model calls, and the limits every call goes through.

Backends are shared by all samples of a run, but accounting must be per sample. So each agent gets
a light :class:`MeteredClient` view over the shared client, bound to that sample's
:class:`UsageLedger`, its own name and its role (candidate, reward, critique, planner, ...).
"""

from __future__ import annotations

import asyncio
import time
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any, AsyncGenerator, Awaitable, Callable, Literal, Mapping, Optional, Sequence, TypeVar, Union

from autogen_core import CancellationToken
from autogen_core.models import ChatCompletionClient, CreateResult, LLMMessage, ModelCapabilities, ModelInfo, RequestUsage
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel

from m3d_agents.backends.choices import Choices, can_sample_choices
from m3d_agents.backends.recording import ChatMessage, chat_messages
from m3d_agents.backends.transports.outage import waits_extend
from m3d_agents.errors import BackendError
from m3d_agents.recital import given, recites, runs
from m3d_agents.verdict import Accounting, RoleUsage, ToolUsage

R = TypeVar("R")


@dataclass
class CallRecord:
    agent: str
    role: str
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    cached: bool
    backend: str = ""
    """The backend that answered: the agent's, or the tool's own (``tools: {NAME: {backend: ...}}``)."""
    wait_s: float = 0.0
    """How long the call waited for its turn (the concurrency gate, the server's single slot) before it was sent."""
    recited: bool = False
    """The answer repeats the call's prompt instead of answering it (:mod:`m3d_agents.recital`)."""
    cut: int = 0
    """Answers of the call that the model stopped at their token cap (``finish_reason == "length"``)."""


@dataclass
class Exchange:
    """One model call as it was sent and answered, kept when a ledger records trajectories."""

    agent: str
    role: str
    messages: list[ChatMessage]
    completion: str
    options: dict[str, Any] = field(default_factory=dict)


CallPhase = Literal["waiting", "answering", "done"]


@dataclass(frozen=True)
class CallEvent:
    """A model call changing phase: waiting for its turn at the backend, being answered, done."""

    agent: str
    role: str
    phase: CallPhase
    at: float
    """``time.monotonic()`` when the phase began."""


CallObserver = Callable[[CallEvent], None]
"""Told of every call's phases, for a live view of who is thinking (``m3d debate``'s status line)."""


@dataclass
class UsageLedger:
    """Every model call made for one sample.

    With ``record_messages`` it also keeps each call's messages and answer (:class:`Exchange`), so a
    run of any strategy can be exported as training data; images are kept once, by hash.
    """

    records: list[CallRecord] = field(default_factory=list)
    parse_retries: int = 0
    record_messages: bool = False
    exchanges: list[Exchange] = field(default_factory=list)
    images: dict[str, bytes] = field(default_factory=dict)
    tools: dict[str, ToolUsage] = field(default_factory=dict)
    """Tool calls of the sample by tool name, counted where the registry binds a tool."""
    recitals: list[str] = field(default_factory=list)
    """The answers that repeated their prompt, so a verdict can tell whether its explanation is one of them."""
    answered: list[list[tuple[str, ...]]] = field(default_factory=list)
    """The word runs of every answer so far: a later prompt may quote them (a debate's history), and an answer that
    repeats an earlier answer keeps to its argument, which is not repeating what the model was given to read."""
    observer: CallObserver | None = None
    """Told when each call of the sample waits, is answered and is done (a live view; never accounting)."""

    def observe(self, agent: str, role: str, phase: CallPhase) -> None:
        if self.observer is not None:
            self.observer(CallEvent(agent, role, phase, time.monotonic()))

    def add(self, record: CallRecord) -> None:
        self.records.append(record)

    def add_recital(self, answer: str) -> None:
        self.recitals.append(answer)

    def is_recital(self, text: str) -> bool:
        """Whether ``text`` (a verdict's explanation) comes from an answer that repeated its prompt."""
        return any(recites(answer, text) for answer in self.recitals)

    def count_parse_retry(self) -> None:
        """One more question asked again because its answer could not be read (an ``on_retry`` for :func:`~m3d_agents.asking.ask`)."""
        self.parse_retries += 1

    def record_tool(self, tool: str, unavailable: bool) -> None:
        usage = self.tools.setdefault(tool, ToolUsage())
        usage.calls += 1
        usage.unavailable += int(unavailable)

    def record_exchange(
        self, agent: str, role: str, messages: Sequence[LLMMessage], result: CreateResult, options: Mapping[str, Any]
    ) -> None:
        content = result.content if isinstance(result.content, str) else repr(result.content)
        kept = {k: v for k, v in options.items() if isinstance(v, (int, float, str, bool)) or v is None}
        self.exchanges.append(Exchange(agent, role, chat_messages(messages, self.images), content, kept))

    def calls(self, role: str | None = None, agent: str | None = None) -> int:
        return sum(1 for r in self.records if (role is None or r.role == role) and (agent is None or r.agent == agent))

    def accounting(self) -> Accounting:
        by_role = _usage_by(self.records, lambda r: r.role)
        by_agent = _usage_by(self.records, lambda r: r.agent)
        by_backend = _usage_by(self.records, lambda r: r.backend)
        return Accounting(
            model_calls=len(self.records),
            prompt_tokens=sum(r.prompt_tokens for r in self.records),
            completion_tokens=sum(r.completion_tokens for r in self.records),
            latency_s=round(sum(r.latency_s for r in self.records), 4),
            wait_s=round(sum(r.wait_s for r in self.records), 4),
            cache_hits=sum(1 for r in self.records if r.cached),
            recited_prompts=sum(1 for r in self.records if r.recited),
            parse_retries=self.parse_retries,
            cut_answers=sum(r.cut for r in self.records),
            by_role=by_role,
            by_agent=by_agent,
            by_backend={name: usage for name, usage in by_backend.items() if name},
            tools={name: usage.model_copy() for name, usage in self.tools.items()},
        )


def _usage_by(records: list[CallRecord], key: Callable[[CallRecord], str]) -> dict[str, RoleUsage]:
    """Calls, tokens and cut answers per ``key`` of the records, in the order each key first occurs (summed as
    numbers, then made models once: a model per record, updated field by field, cost more than the run's own accounting)."""
    totals: dict[str, list[int]] = {}
    for record in records:
        total = totals.setdefault(key(record), [0, 0, 0, 0])
        total[0] += 1
        total[1] += record.prompt_tokens
        total[2] += record.completion_tokens
        total[3] += record.cut
    return {name: RoleUsage(calls=calls, prompt_tokens=prompt, completion_tokens=completion, cut_answers=cut)
            for name, (calls, prompt, completion, cut) in totals.items()}


class MeteredClient(ChatCompletionClient):
    """A view of a shared client that limits concurrency, enforces a deadline and records usage.

    ``timeout_s`` is the deadline of one whole call, every retry and backoff of the transport
    included (:meth:`~m3d_agents.backends.config.BackendConfig.call_deadline_s`): whatever a server
    does, hang or drip, a call ends by then. It counts the time the call is being answered only:
    not the wait for the concurrency gate, nor, where the server answers one call at a time (the
    embedded llama.cpp server), the wait for its ``slot`` while another call is being answered, nor the
    pauses spent waiting for a server that refuses connections (:mod:`~m3d_agents.backends.transports.outage`),
    which have a budget of their own.
    """

    def __init__(
        self,
        inner: ChatCompletionClient,
        semaphore: asyncio.Semaphore,
        ledger: UsageLedger,
        agent: str,
        role: str,
        timeout_s: float,
        backend: str = "",
        *,
        slot: asyncio.Semaphore | None = None,
    ) -> None:
        self.inner = inner
        self.semaphore = semaphore
        self.slot = slot
        self.ledger = ledger
        self.agent = agent
        self.role = role
        self.timeout_s = timeout_s
        self.backend = backend

    def with_role(self, role: str, agent: str | None = None) -> "MeteredClient":
        return MeteredClient(self.inner, self.semaphore, self.ledger, agent or self.agent, role, self.timeout_s, self.backend,
                             slot=self.slot)

    async def _limited(self, call: Callable[[], Awaitable[R]]) -> tuple[R, float, float]:
        """Run one request under the concurrency gate, the server's slot and the deadline; the result, its latency
        and how long it waited for the gate and the slot before it was sent."""
        self.ledger.observe(self.agent, self.role, "waiting")
        queued = time.perf_counter()
        try:
            async with self.semaphore, (self.slot if self.slot is not None else nullcontext()):
                self.ledger.observe(self.agent, self.role, "answering")
                started = time.perf_counter()
                try:
                    async with asyncio.timeout(self.timeout_s) as deadline:
                        with waits_extend(deadline):
                            result = await call()
                except asyncio.TimeoutError as exc:
                    raise BackendError(
                        f"model call by {self.agent} ({self.role}) gave no answer within its deadline of {self.timeout_s:g} s "
                        "of being answered, every attempt included (the backend's deadline_s)"
                    ) from exc
                return result, time.perf_counter() - started, started - queued
        finally:
            self.ledger.observe(self.agent, self.role, "done")

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
        result, latency, waited = await self._limited(lambda: self.inner.create(
            messages,
            tools=tools,
            tool_choice=tool_choice,
            json_output=json_output,
            extra_create_args=extra_create_args,
            cancellation_token=cancellation_token,
        ))
        usage = result.usage
        recited = self._recited(messages, [result])
        self.ledger.add(
            CallRecord(
                agent=self.agent,
                role=self.role,
                prompt_tokens=usage.prompt_tokens if usage else 0,
                completion_tokens=usage.completion_tokens if usage else 0,
                latency_s=latency,
                cached=bool(result.cached),
                backend=self.backend,
                wait_s=waited,
                recited=bool(recited),
                cut=int(result.finish_reason == "length"),
            )
        )
        if self.ledger.record_messages:
            self.ledger.record_exchange(self.agent, self.role, messages, result, extra_create_args)
        return result

    def _recited(self, messages: Sequence[LLMMessage], results: Sequence[CreateResult]) -> list[str]:
        """The answers among ``results`` that repeat the prompt, each kept in the ledger (see :mod:`m3d_agents.recital`)."""
        prompt = given("\n".join(
            part for message in messages
            for part in ([message.content] if isinstance(message.content, str) else message.content if isinstance(message.content, list) else [])
            if isinstance(part, str)
        ), self.ledger.answered)
        answers = [r.content for r in results if isinstance(r.content, str)]
        recited = [answer for answer in answers if recites(prompt, answer)]
        for answer in recited:
            self.ledger.add_recital(answer)
        self.ledger.answered.extend(runs(answer) for answer in answers)
        return recited

    @property
    def samples_choices(self) -> bool:
        """Whether the client underneath answers several choices per request (see :mod:`m3d_agents.backends.choices`)."""
        return can_sample_choices(self.inner)

    async def create_choices(
        self,
        messages: Sequence[LLMMessage],
        n: int,
        *,
        json_output: Optional[bool | type[BaseModel]] = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: Optional[CancellationToken] = None,
    ) -> Choices:
        """Up to ``n`` answers from one request, recorded as one call: the prompt once, the completions of all choices."""
        if not can_sample_choices(self.inner):
            raise BackendError(f"the backend of {self.agent} cannot answer several choices per request; ask it once per choice")
        inner: Any = self.inner
        choices, latency, waited = await self._limited(lambda: inner.create_choices(
            messages, n, json_output=json_output, extra_create_args=extra_create_args, cancellation_token=cancellation_token,
        ))
        recited = self._recited(messages, choices.results)
        self.ledger.add(
            CallRecord(
                agent=self.agent,
                role=self.role,
                prompt_tokens=choices.usage.prompt_tokens,
                completion_tokens=choices.usage.completion_tokens,
                latency_s=latency,
                cached=choices.cached,
                backend=self.backend,
                wait_s=waited,
                recited=bool(recited) and len(recited) == len(choices.results),
                cut=sum(1 for result in choices.results if result.finish_reason == "length"),
            )
        )
        if self.ledger.record_messages:
            for i, result in enumerate(choices.results):
                self.ledger.record_exchange(self.agent, self.role, messages, result, {**extra_create_args, "n": n, "choice": i})
        return choices

    async def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = [],
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: Optional[bool | type[BaseModel]] = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: Optional[CancellationToken] = None,
    ) -> AsyncGenerator[Union[str, CreateResult], None]:
        result = await self.create(
            messages,
            tools=tools,
            tool_choice=tool_choice,
            json_output=json_output,
            extra_create_args=extra_create_args,
            cancellation_token=cancellation_token,
        )
        yield result

    async def close(self) -> None:
        """A view owns nothing; the shared client is closed by its :class:`Backend`."""

    def actual_usage(self) -> RequestUsage:
        return self.inner.actual_usage()

    def total_usage(self) -> RequestUsage:
        return self.inner.total_usage()

    def count_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []) -> int:
        return self.inner.count_tokens(messages, tools=tools)

    def remaining_tokens(self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []) -> int:
        return self.inner.remaining_tokens(messages, tools=tools)

    @property
    def capabilities(self) -> ModelCapabilities:
        return self.inner.capabilities

    @property
    def model_info(self) -> ModelInfo:
        return self.inner.model_info
