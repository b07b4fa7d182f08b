"""Typed errors that callers can act on.

Every error names *where* the problem is (a field or an answer format) and *what* it is, so that a
batch run can record it next to the sample instead of crashing.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import ValidationError


MAX_LINE_CHARS = 600
"""An error or warning line longer than this is cut: a message that quotes a whole configuration (a list of
32,000 backend names) is not read, it scrolls the cause off the screen."""


def one_line(text: str, limit: int = MAX_LINE_CHARS) -> str:
    """``text`` as one line (every run of white space one space), cut to ``limit`` characters with a note of the cut."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    return f"{flat[: limit - 40].rstrip()} ... ({len(flat) - limit + 40} more characters)"


_NAMED_PROBLEM = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*): (.+)", re.S)


class InputError(ValueError):
    """A sample, an image or a config value is unusable.

    ``field`` is a dotted path such as ``images[0]`` or ``metadata.claim_date``.
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")

    @classmethod
    def from_validation(cls, exc: ValidationError, origin: str = "", default_field: str = "value") -> "InputError":
        """The first problem of a pydantic error on one line: the field's path, what is wrong, and where.

        Never ``str(exc)``: it spans lines, quotes the rejected input (a key pasted in the wrong
        place, or a YAML file whose aliases expand to a billion nodes) and can cost minutes.
        """
        problems = exc.errors(include_url=False, include_input=False, include_context=False)
        if not problems:
            return cls(origin or default_field, "invalid")
        first = problems[0]
        message = str(first["msg"]).removeprefix("Value error, ").removeprefix("Assertion failed, ")
        field = ".".join(str(part) for part in first["loc"])
        named = _NAMED_PROBLEM.match(message) if not field else None
        if named:  # a whole-model check that names the setting it is about ("seats: 1500 items, ...")
            field, message = named.group(1), named.group(2)
        field = field or default_field
        more = f"; and {len(problems) - 1} more problem{'s' if len(problems) > 2 else ''}" if len(problems) > 1 else ""
        where = f" (in {origin}{more})" if origin else (f" ({more[2:]})" if more else "")
        return cls(field, f"{message}{where}")


class ParseError(ValueError):
    """Model text could not be read in the expected answer format.

    The caller retries the model and, if it still fails, records an abstention with this reason;
    the parser never guesses.
    """

    def __init__(self, fmt: str, reason: str, text: str) -> None:
        self.fmt = fmt
        self.reason = reason
        self.text = text
        snippet = text if len(text) <= 160 else text[:157] + "..."
        super().__init__(f"cannot parse {fmt}: {reason} (got {snippet!r})")


class BackendError(RuntimeError):
    """A model backend is misconfigured or does not answer."""


class AnswerRefused(BackendError):
    """An endpoint's answer that this client will not read: too large, nested too deep, or impossible
    (negative token counts). Not retried: the same request would most likely get the same answer."""

    def __init__(self, url: str, problem: str) -> None:
        self.problem = problem
        super().__init__(f"the model endpoint {url} sent an answer that was refused: {problem}")


class EngineDead(BackendError):
    """A vLLM server whose engine has died: it answers every request with a 500 until someone restarts it.

    Not retried: waiting does not bring the engine back, and a batch would spend every retry of every
    call on it. The message names the known cause on vLLM's CPU build and the flag that avoids it.
    """

    def __init__(self, url: str) -> None:
        super().__init__(
            f"the vLLM server at {url} has crashed: its engine died and it fails every request until it is restarted "
            f"('{VLLM_ENGINE_DEAD}'); on vLLM's CPU build the known cause is a seeded request whose prompt was prefilled "
            "in chunks ('CPU Generator does not use offset' in the server's log): restart it with "
            "--no-enable-chunked-prefill (scripts/serve-vllm-cpu.sh passes it; see docs/guides/vllm-cpu.md)"
        )


VLLM_ENGINE_DEAD = "EngineCore encountered an issue"
"""How vLLM's ``EngineDeadError`` begins (vllm/v1/engine/exceptions.py): the one error it calls unrecoverable."""


class EndpointRefused(BackendError):
    """The endpoint answered with an HTTP error that a retry will not fix (a bad request, a wrong key, ...).

    ``status`` is the HTTP status; the message carries the server's own explanation, so a user sees
    why (a context length, a model name) without a traceback.
    """

    def __init__(self, url: str, status: int, message: str) -> None:
        self.status = status
        super().__init__(f"the model endpoint {url} refused the request ({status}): {message}")
