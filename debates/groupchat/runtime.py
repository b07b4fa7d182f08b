"""The agent runtime a debate team runs on: AutoGen's own, minus telemetry that nobody receives.

AutoGen's ``SingleThreadedAgentRuntime`` opens an OpenTelemetry span and serialises the message to
JSON, for its event log and span attributes, at every hop of every message, whether or not a tracer
or a log handler is listening; and it formats a log line holding the whole message (the repr of every
pydantic model in it) at every publish, whether or not the line is then dropped. A debate turn makes
about seven hops, and in batch runs this work cost more CPU than the model call itself
(``benchmarks/throughput.py``). So when no tracer provider is installed and AutoGen's loggers
(``autogen_core``, ``autogen_core.events``) are below INFO, teams run on :class:`QuietRuntime`,
which skips exactly that work. Install a tracer provider, or enable either logger at INFO, and teams
get AutoGen's full runtime back.

Two more costs are paid per agent rather than per hop, and are trimmed the same way:
:func:`quiet_agent_spans` skips the span that AgentChat opens around every agent invocation when
nobody receives spans, and every :class:`RoutedAgent` subclass finds its message handlers once (AutoGen
scans the class with ``dir()`` for every agent it creates, and a debate creates eight per sample).
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import uuid
from contextlib import nullcontext
from functools import lru_cache
from typing import Any, Awaitable, Callable, List, Mapping, Sequence

import autogen_agentchat.agents._base_chat_agent as base_chat_agent
import autogen_agentchat.teams._group_chat._chat_agent_container as chat_agent_container
from autogen_core import (
    EVENT_LOGGER_NAME,
    ROOT_LOGGER_NAME,
    AgentId,
    CancellationToken,
    MessageContext,
    MessageHandlerContext,
    RoutedAgent,
    SingleThreadedAgentRuntime,
    TopicId,
)
from autogen_core._single_threaded_agent_runtime import PublishMessageEnvelope
from autogen_core._telemetry import EnvelopeMetadata
from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider, get_tracer_provider


EVENTS = logging.getLogger(EVENT_LOGGER_NAME)
RUNTIME_LOG = logging.getLogger(ROOT_LOGGER_NAME)
NO_TRACE = EnvelopeMetadata()
"""What AutoGen's envelopes carry for a trace where no tracer is installed: no parent, no state."""


def _listened_to() -> bool:
    """Whether AutoGen's runtime log or event log would keep a record now."""
    return RUNTIME_LOG.isEnabledFor(logging.INFO) or EVENTS.isEnabledFor(logging.INFO)


class _NoSpans:
    """Stands in for AutoGen's trace helper: every block runs without a span."""

    def trace_block(self, *args: Any, **kwargs: Any) -> nullcontext[None]:
        return nullcontext()


class QuietRuntime(SingleThreadedAgentRuntime):
    def __init__(self) -> None:
        super().__init__(ignore_unhandled_exceptions=False, tracer_provider=NoOpTracerProvider())
        self._tracer_helper = _NoSpans()  # type: ignore[assignment]
        # A message's id, read by nobody but AutoGen's log and traces: one random prefix per runtime and a count,
        # where AutoGen asks the operating system for a fresh UUID for every message.
        self._id_prefix = uuid.uuid4().hex
        self._published = itertools.count(1)

    async def _create_otel_attributes(self, *args: Any, **kwargs: Any) -> Mapping[str, str]:
        return {}

    def _try_serialize(self, message: Any) -> str:
        if EVENTS.isEnabledFor(logging.INFO):
            return super()._try_serialize(message)
        return ""

    async def publish_message(
        self,
        message: Any,
        topic_id: TopicId,
        *,
        sender: AgentId | None = None,
        cancellation_token: CancellationToken | None = None,
        message_id: str | None = None,
    ) -> None:
        """AutoGen's own, less its span, its log line and its event: the envelope queued is the same."""
        if _listened_to():
            return await super().publish_message(message, topic_id, sender=sender, cancellation_token=cancellation_token,
                                                 message_id=message_id)
        await self._message_queue.put(PublishMessageEnvelope(
            message=message,
            cancellation_token=cancellation_token if cancellation_token is not None else CancellationToken(),
            sender=sender,
            topic_id=topic_id,
            metadata=NO_TRACE,
            message_id=message_id if message_id is not None else f"{self._id_prefix}-{next(self._published)}",
        ))

    async def _process_publish(self, message_envelope: PublishMessageEnvelope) -> None:
        """AutoGen's own delivery to every subscriber but the sender, less its spans, log lines and events."""
        if _listened_to():
            return await super()._process_publish(message_envelope)
        try:
            responses: List[Awaitable[Any]] = []
            recipients = await self._subscription_manager.get_subscribed_recipients(message_envelope.topic_id)
            for agent_id in recipients:
                if message_envelope.sender is not None and agent_id == message_envelope.sender:
                    continue
                if message_envelope.sender is not None:
                    await self._get_agent(message_envelope.sender)
                message_context = MessageContext(
                    sender=message_envelope.sender,
                    topic_id=message_envelope.topic_id,
                    is_rpc=False,
                    cancellation_token=message_envelope.cancellation_token,
                    message_id=message_envelope.message_id,
                )
                agent = await self._get_agent(agent_id)
                responses.append(_deliver(agent, message_envelope.message, message_context))
            await asyncio.gather(*responses)
        except BaseException as e:
            if not self._ignore_unhandled_handler_exceptions:
                self._background_exception = e
        finally:
            self._message_queue.task_done()


_HANDLING = MessageHandlerContext._MESSAGE_HANDLER_CONTEXT
"""What ``MessageHandlerContext.populate_context`` sets around a handler, set here without its generator."""


async def _deliver(agent: Any, message: Any, context: MessageContext) -> Any:
    token = _HANDLING.set(agent.id)
    try:
        return await agent.on_message(message, ctx=context)
    except BaseException:
        RUNTIME_LOG.error(f"Error processing publish message for {agent.id}", exc_info=True)
        raise
    finally:
        _HANDLING.reset(token)


def telemetry_wanted() -> bool:
    """Whether anyone receives AutoGen's runtime telemetry in this process."""
    if _listened_to():
        return True
    if os.environ.get("AUTOGEN_DISABLE_RUNTIME_TRACING") == "true":
        return False
    return not isinstance(get_tracer_provider(), (ProxyTracerProvider, NoOpTracerProvider))


def team_runtime() -> SingleThreadedAgentRuntime:
    """A fresh runtime for one team: the quiet one unless telemetry is wanted."""
    if telemetry_wanted():
        return SingleThreadedAgentRuntime(ignore_unhandled_exceptions=False)
    return QuietRuntime()


def _unless_telemetry_wanted(span: Callable[..., Any]) -> Callable[..., Any]:
    def maybe_span(*args: Any, **kwargs: Any) -> Any:
        return span(*args, **kwargs) if telemetry_wanted() else nullcontext()

    maybe_span.__wrapped__ = span  # type: ignore[attr-defined]
    maybe_span.quieted = True  # type: ignore[attr-defined]
    return maybe_span


_AGENT_SPAN = "trace_invoke_agent_span"


def quiet_agent_spans() -> None:
    """AgentChat opens a span around every agent invocation; without a receiver it is pure cost."""
    for module in (chat_agent_container, base_chat_agent):
        current = getattr(module, _AGENT_SPAN)
        # Not ``__wrapped__``: AutoGen's span is a context manager, which carries one of its own.
        if not getattr(current, "quieted", False):
            setattr(module, _AGENT_SPAN, _unless_telemetry_wanted(current))


@lru_cache(maxsize=None)
def _handlers_of(cls: type[RoutedAgent]) -> Sequence[Any]:
    return tuple(_discover_handlers_by_scan.__func__(cls))


_discover_handlers_by_scan = RoutedAgent.__dict__["_discover_handlers"]


def _discover_handlers_once(cls: type[RoutedAgent]) -> Sequence[Any]:
    """Handlers are methods decorated when the class is defined, so one scan per class is enough."""
    return _handlers_of(cls)


RoutedAgent._discover_handlers = classmethod(_discover_handlers_once)  # type: ignore[method-assign, assignment]
quiet_agent_spans()
