"""The agent runtime a debate team runs on: AutoGen's own, minus telemetry that nobody receives.

AutoGen's ``SingleThreadedAgentRuntime`` opens an OpenTelemetry span and serialises the message to
JSON, for its event log and span attributes, at every hop of every message, whether or not a tracer
or a log handler is listening. A debate turn makes about seven hops, and in batch runs this work
cost more CPU than the model call itself (``benchmarks/throughput.py``). So when no tracer provider
is installed and the AutoGen event log is off, teams run on :class:`QuietRuntime`, which skips
exactly that work. Install a tracer provider, or enable the ``autogen_core.events`` logger at
INFO, and teams get AutoGen's full runtime back.
"""

from __future__ import annotations

import logging
import os
from contextlib import nullcontext
from typing import Any, Mapping

from autogen_core import EVENT_LOGGER_NAME, SingleThreadedAgentRuntime
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
