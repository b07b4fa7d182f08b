"""What both transports do with an answer: which failures a retry can fix, how long to wait, what the last one says.

Owning this layer, instead of leaving it to each HTTP stack, is what makes ``transport: http`` and
``transport: sdk`` fail alike. The OpenAI SDK, left to itself, retries on its own schedule, does not
retry a 200 whose body is not JSON (a proxy's error page: it raises ``JSONDecodeError``, or hands the
page's text on as if it were a completion), and raises its own exception types, whose text names
neither the endpoint nor the problem in words a user can act on.
"""

from __future__ import annotations

import asyncio
import errno
import random
import time
from email.utils import parsedate_to_datetime
from typing import Any, Awaitable, Callable, Mapping, TypeVar

from m3d_agents.backends.transports.outage import Outage
from m3d_agents.errors import VLLM_ENGINE_DEAD, AnswerRefused, BackendError, EndpointRefused, EngineDead
from m3d_agents.redaction import redact
from m3d_agents.safe_json import JsonTooDeep, loads_bounded

T = TypeVar("T")

RETRIED_STATUSES = frozenset({408, 409, 429})
"""Besides every 5xx: a timeout the server gave up on, a conflict, a rate limit."""

DEFAULT_MAX_ANSWER_BYTES = 8 * 1024 * 1024
"""The most of one answer a transport reads (``max_answer_bytes``): far above any chat completion
(a 32k-token answer is about 150 kB), far below what an endless body costs in memory."""

NO_KEY = "EMPTY"
"""What a backend without a key sends as its bearer token: vLLM's convention for a server started
without ``--api-key``, and something the OpenAI SDK accepts (it refuses to send no key at all)."""



class TransientFailure(Exception):
    """One attempt failed in a way that a later one may not: what happened, and the wait the server asked for."""

    def __init__(self, problem: str, retry_after: float | None = None) -> None:
        self.problem = problem
        self.retry_after = retry_after
        super().__init__(problem)


class ConnectionRefused(TransientFailure):
    """The connection was refused: nothing listens at the endpoint's address (yet). Retried for a time,
    the backend's ``restart_wait_s`` (:mod:`~m3d_agents.backends.transports.outage`), not for a number of attempts."""


def connection_failure(exc: BaseException, key: str | None) -> TransientFailure:
    """What a failed connection means for a retry: a refusal, or another transient failure, in words."""
    problem = without_secrets(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__, key)
    return ConnectionRefused(problem) if is_refusal(exc) else TransientFailure(problem)


def is_refusal(exc: BaseException) -> bool:
    """Whether ``exc``, or what it wraps (aiohttp's and httpx's connection errors wrap the socket's), is a refused connection."""
    seen: set[int] = set()
    todo: list[BaseException | None] = [exc]
    while todo:
        current = todo.pop()
        if current is None or id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, ConnectionRefusedError) or (isinstance(current, OSError) and current.errno == errno.ECONNREFUSED):
            return True
        todo += [current.__cause__, current.__context__, getattr(current, "os_error", None)]
    return False


def is_retried(status: int) -> bool:
    return status in RETRIED_STATUSES or status >= 500


def without_secrets(text: str, key: str | None) -> str:
    """``text`` redacted (:func:`m3d_agents.redaction.redact`), the client's own key included: some
    servers and proxies echo the ``Authorization`` header in their error pages, and error text ends up
    in logs and result files."""
    return redact(text, extra=[key] if key and key != NO_KEY else [])


def answer_of(url: str, status: int, raw: bytes, headers: Mapping[str, str], key: str | None) -> Any:
    """The parsed JSON of a successful answer; otherwise the error that says what to do about it.

    Raises :class:`TransientFailure` for a 408, 409, 429 or 5xx, and for a 200 whose body is not
    JSON (a proxy's error page is as passing as a 502); :class:`EndpointRefused` for any other status;
    :class:`EngineDead` for vLLM's answer once its engine has died, a 500 that no retry can fix.
    """
    if status == 200:
        try:
            return loads_bounded(raw)
        except JsonTooDeep as exc:
            raise AnswerRefused(url, str(exc)) from None
        except ValueError:
            snippet = without_secrets(repr(raw[:200]), key)
            raise TransientFailure(f"sent a body that is not JSON: {snippet}") from None
    message = without_secrets(error_message(raw), key)
    if status >= 500 and message.startswith(VLLM_ENGINE_DEAD):
        raise EngineDead(url)
    if is_retried(status):
        raise TransientFailure(f"HTTP {status}: {message}", retry_after_s(headers))
    raise EndpointRefused(url, status, message)


def too_large(url: str, limit: int, declared: int | None = None) -> AnswerRefused:
    """An answer over ``max_answer_bytes``: refused, and said so, rather than read to the end."""
    size = f" of {declared} bytes" if declared is not None else ""
    return AnswerRefused(url, f"an answer{size} over the limit of {limit} bytes (the backend's max_answer_bytes)")


def declared_length(headers: Mapping[str, str]) -> int | None:
    """The ``Content-Length`` a server declared, when it is a number."""
    try:
        value = int(headers.get("content-length", ""))
    except ValueError:
        return None
    return value if value >= 0 else None


def error_message(raw: bytes) -> str:
    """The ``error.message`` of an OpenAI-style error body, else the start of the body."""
    try:
        data = loads_bounded(raw)
        error = data.get("error", data) if isinstance(data, dict) else data
        message = error.get("message") if isinstance(error, dict) else error
        return str(message or data)[:300]
    except ValueError:
        return raw[:300].decode("utf-8", "replace")


def retry_after_s(headers: Mapping[str, str]) -> float | None:
    """The wait a server asked for: ``retry-after-ms``, else ``Retry-After`` in seconds or as an HTTP date."""
    millis = _number(headers.get("retry-after-ms"))
    if millis is not None:
        return millis / 1000
    value = headers.get("retry-after")
    seconds = _number(value)
    if seconds is not None or value is None:
        return seconds
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def _number(value: str | None) -> float | None:
    try:
        return max(0.0, float(value)) if value is not None else None
    except ValueError:
        return None


def backoff_s(attempt: int, retry_after: float | None = None) -> float:
    """The server's own ``Retry-After`` when it gave one (capped at a minute), else exponential backoff with jitter."""
    if retry_after is not None:
        return min(60.0, retry_after)
    return min(8.0, 0.5 * 2 ** (attempt - 1)) * (0.75 + random.random() / 2)


async def with_retries(attempt: Callable[[], Awaitable[T]], *, url: str, max_retries: int, restart_wait_s: float = 0.0) -> T:
    """``attempt()`` until it succeeds, ``max_retries`` more times at most after a :class:`TransientFailure`;
    then a :class:`BackendError` naming the endpoint, the number of attempts and the last problem.

    A refused connection (:class:`ConnectionRefused`) is retried for ``restart_wait_s`` seconds from the
    call's first refusal instead, and counts as no attempt; with ``restart_wait_s`` 0 it is one more
    transient failure.
    """
    problem, retry_after = "", None
    failures = 0
    outage: Outage | None = None
    while True:
        try:
            result = await attempt()
        except ConnectionRefused as refused:
            if restart_wait_s > 0:
                outage = outage or Outage(url, restart_wait_s)
                await outage.wait(backoff_s)
                continue
            problem, retry_after = refused.problem, None
        except TransientFailure as failure:
            problem, retry_after = failure.problem, failure.retry_after
        else:
            if outage is not None:
                outage.answered()
            return result
        failures += 1
        if failures > max_retries:
            break
        await asyncio.sleep(backoff_s(failures, retry_after))
    raise BackendError(f"the model endpoint {url} did not answer after {failures} attempt{'s' if failures > 1 else ''} ({problem})")
