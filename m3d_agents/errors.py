"""Typed errors that callers can act on.

Every error names *where* the problem is (a field or an answer format) and *what* it is, so that a
batch run can record it next to the sample instead of crashing.
"""

from __future__ import annotations


class InputError(ValueError):
    """A sample, an image or a config value is unusable.

    ``field`` is a dotted path such as ``images[0]`` or ``metadata.claim_date``.
    """

    def __init__(self, field: str, problem: str) -> None:
        self.field = field
        self.problem = problem
        super().__init__(f"{field}: {problem}")


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


class EndpointRefused(BackendError):
    """The endpoint answered with an HTTP error that a retry will not fix (a bad request, a wrong key, ...).

    ``status`` is the HTTP status; the message carries the server's own explanation, so a user sees
    why (a context length, a model name) without a traceback.
    """

    def __init__(self, url: str, status: int, message: str) -> None:
        self.status = status
        super().__init__(f"the model endpoint {url} refused the request ({status}): {message}")
