"""The agent runtime a debate team runs on: AutoGen's own, minus telemetry that nobody receives.

AutoGen's ``SingleThreadedAgentRuntime`` opens an OpenTelemetry span and serialises the message to
JSON, for its event log and span attributes, at every hop of every message, whether or not a tracer
or a log handler is listening. A debate turn makes about seven hops, and in batch runs this work
cost more CPU than the model call itself (``benchmarks/throughput.py``). So when no tracer provider
is installed and the AutoGen event log is off, teams run on :class:`QuietRuntime`, which skips
exactly that work. Install a tracer provider, or enable the ``autogen_core.events`` logger at
INFO, and teams get AutoGen's full runtime back.

Two more costs are paid per agent rather than per hop, and are trimmed the same way:
:func:`quiet_agent_spans` skips the span that AgentChat opens around every agent invocation when
nobody receives spans, and every :class:`RoutedAgent` subclass finds its message handlers once (AutoGen
scans the class with ``dir()`` for every agent it creates, and a debate creates eight per sample).
"""

from __future__ import annotations

import logging
import os
from contextlib import nullcontext
from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

import autogen_agentchat.agents._base_chat_agent as base_chat_agent
import autogen_agentchat.teams._group_chat._chat_agent_container as chat_agent_container
from autogen_core import EVENT_LOGGER_NAME, RoutedAgent, SingleThreadedAgentRuntime
from opentelemetry.trace import NoOpTracerProvider, ProxyTracerProvider, get_tracer_provider


EVENTS = logging.getLogger(EVENT_LOGGER_NAME)


class _NoSpans:
    """Stands in for AutoGen's trace helper: every block runs without a span."""

    def trace_block(self, *args: Any, **kwargs: Any) -> nullcontext[None]:
        return nullcontext()


class QuietRuntime(SingleThreadedAgentRuntime):
    def __init__(self) -> None:
        super().__init__(ignore_unhandled_exceptions=False, tracer_provider=NoOpTracerProvider())
        self._tracer_helper = _NoSpans()  # type: ignore[assignment]

    async def _create_otel_attributes(self, *args: Any, **kwargs: Any) -> Mapping[str, str]:
        return {}

    def _try_serialize(self, message: Any) -> str:
        if EVENTS.isEnabledFor(logging.INFO):
            return super()._try_serialize(message)
        return ""


def telemetry_wanted() -> bool:
    """Whether anyone receives AutoGen's runtime telemetry in this process."""
    if EVENTS.isEnabledFor(logging.INFO):
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
    return maybe_span


_AGENT_SPAN = "trace_invoke_agent_span"


def quiet_agent_spans() -> None:
    """AgentChat opens a span around every agent invocation; without a receiver it is pure cost."""
    for module in (chat_agent_container, base_chat_agent):
        current = getattr(module, _AGENT_SPAN)
        if not hasattr(current, "__wrapped__"):
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
