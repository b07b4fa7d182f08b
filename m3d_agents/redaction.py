"""Keeping keys out of everything a person, a log or a file gets to see.

Keys reach error text by routes nobody planned: a server that echoes the ``Authorization`` header
in its error message or its answer, a provider URL with ``api_key=`` in its query, an AutoGen
traceback that quotes a request. Rather than trust every raiser, text is redacted where it leaves
the process: the CLI's error line and printed verdicts, a batch run's rows, the evidence failure
lists, log records, the response cache, the transports' error text and the web page. This is the
one rule set and the one mask (``***``) for all of them.

Two nets, because either alone misses cases: the *values* of the keys this process holds (from
environment variables whose names say they hold a secret, and from variables a backend config
names in ``api_key_env``), and *shapes* of credentials (``Bearer ...``, ``api_key=...`` in a URL,
key headers, OpenAI- and Google-style keys) for keys this process never saw.
"""

from __future__ import annotations

import logging
import os
import re
from functools import lru_cache
from typing import Any, Iterable

MASK = "***"
MIN_SECRET_CHARS = 8
"""Shorter values (``EMPTY``, ``local``, ``1``) are placeholders, and masking them would garble text."""

SECRET_ENV_NAME = re.compile(r"(?:^|_)(?:API_?KEY|KEY|KEYS|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIALS?)(?:_|$)", re.IGNORECASE)

_SHAPES: tuple[tuple[re.Pattern[str], str, tuple[str, ...]], ...] = (
    (re.compile(r"\b(Bearer)(\s+)(?!\*\*\*)[A-Za-z0-9._~+/=:-]{4,}", re.IGNORECASE), rf"\1\2{MASK}", ("bearer",)),
    (
        re.compile(
            r"((?:^|[?&;])(?:api[_-]?key|apikey|key|token|access[_-]?token|auth|password|secret|client[_-]?secret|sig|signature)=)"
            r"(?!\*\*\*)[^&#\s'\"\\]+",
            re.IGNORECASE,
        ),
        rf"\1{MASK}",
        ("=",),
    ),
    (
        re.compile(
            r"((?:proxy-)?authorization|x-api-key|x-goog-api-key|api[-_]?key|x-auth-token|cookie)"
            r"([\"']?\s*[:=]\s*[\"']?)(?!\*\*\*)(?:(?:Bearer|Basic)\s+)?[^\s\"',;)\]}\\]+",
            re.IGNORECASE,
        ),
        rf"\1\2{MASK}",
        ("authorization", "api", "x-auth-token", "cookie"),
    ),
    (re.compile(r"\b([a-z][a-z0-9+.-]*://)[^/\s:@'\"]+:[^/\s@'\"]+@", re.IGNORECASE), rf"\1{MASK}@", ("://",)),
    (re.compile(r"\bsk-[A-Za-z0-9_-]{12,}"), MASK, ("sk-",)),
    (re.compile(r"\bAIza[0-9A-Za-z_-]{30,}"), MASK, ("aiza",)),
)
"""(shape, replacement, clues): a shape can only match text whose :func:`folded` form holds one of its
clues, so a text that holds none is never searched for it. Most text that is redacted (a verdict's
every string, a row's transcript) holds no credential, and the searches, not the clues, are what
redaction costs: about 30 microseconds per hundred characters."""

_ANY_CLUE = re.compile("|".join(re.escape(clue) for _, _, clues in _SHAPES for clue in clues))
"""Any shape's clue: one search tells most texts apart from those that need the shapes' own."""

_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s", "\u212a": "k"})
"""The only characters outside ASCII that a case-insensitive pattern takes for an ASCII letter (İ, ı, ſ
and the Kelvin sign); ``tests/m3d_agents/test_redaction.py`` checks every code point."""


def folded(text: str) -> str:
    """``text`` lower-cased as a case-insensitive pattern reads it, to look for the shapes' clues in."""
    return (text if text.isascii() else text.translate(_FOLD)).lower()


_secret_env_names: set[str] = set()


def register_secret_env(name: str | None) -> None:
    """Treat the variable ``name`` as holding a key, whatever it is called (``api_key_env: MY_VAR``)."""
    if name:
        _secret_env_names.add(name)


def known_secrets() -> list[str]:
    """Every key value this process knows of, longest first (so a key's prefix never masks half of it)."""
    values: set[str] = set()
    for name in os.environ:
        if name in _secret_env_names or _names_a_secret(name):
            value = os.environ.get(name, "")
            if len(value) >= MIN_SECRET_CHARS:
                values.add(value)
    return sorted(values, key=len, reverse=True)


@lru_cache(maxsize=4096)
def _names_a_secret(name: str) -> bool:
    """Whether a variable's name says it holds a secret (asked for every variable of the environment, every row)."""
    return SECRET_ENV_NAME.search(name) is not None


def redact(text: str, secrets: list[str] | None = None, extra: Iterable[str] = ()) -> str:
    """``text`` with every known key and every credential-shaped string replaced by ``***``.

    ``secrets`` replaces the keys this process knows of (for a caller that looked them up once);
    ``extra`` adds values known only to the caller (a client's own key, the web page's token)."""
    values = known_secrets() if secrets is None else list(secrets)
    more = [v for v in extra if v and len(v) >= MIN_SECRET_CHARS and v not in values] if extra else []
    for value in sorted([*values, *more], key=len, reverse=True) if values or more else ():
        if value in text:
            text = text.replace(value, MASK)
    # A mask (``***``) holds no clue, so text a shape has masked holds no clue that it did not hold before.
    clues = folded(text)
    if _ANY_CLUE.search(clues) is None:
        return text
    for pattern, replacement, shape_clues in _SHAPES:
        for clue in shape_clues:
            if clue in clues:
                text = pattern.sub(replacement, text)
                break
    return text


def redact_data(data: Any, secrets: list[str] | None = None, extra: Iterable[str] = ()) -> Any:
    """``data`` (what ``json`` reads and writes) with every string in it redacted, keys of mappings included;
    ``secrets`` and ``extra`` as for :func:`redact`."""
    if secrets is None:
        secrets = known_secrets()
    more = [v for v in extra if v and len(v) >= MIN_SECRET_CHARS and v not in secrets]
    if more:
        secrets = sorted([*secrets, *more], key=len, reverse=True)
    if isinstance(data, str):
        return redact(data, secrets)
    if isinstance(data, dict):
        return {redact_data(k, secrets): redact_data(v, secrets) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [redact_data(item, secrets) for item in data]
    return data


def redact_url(url: str) -> str:
    """A URL for messages and logs: secret query parameters blanked, known keys masked."""
    return redact(url)


class RedactingFormatter(logging.Formatter):
    """Formats a log record, traceback included, and then redacts the whole text.

    ``with_traceback=False`` gives one line per record: a user sees what happened, and ``--debug``
    brings the tracebacks back.
    """

    def __init__(self, fmt: str | None = None, *, with_traceback: bool = True) -> None:
        super().__init__(fmt)
        self.with_traceback = with_traceback

    def format(self, record: logging.LogRecord) -> str:
        if self.with_traceback:
            return redact(super().format(record))
        saved = record.exc_info, record.exc_text, record.stack_info
        record.exc_info, record.exc_text, record.stack_info = None, None, None
        try:
            text = super().format(record)
        finally:
            record.exc_info, record.exc_text, record.stack_info = saved
        return redact(text.splitlines()[0] if text else text)
