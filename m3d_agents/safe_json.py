"""Reading JSON whose author is not trusted (an endpoint's answer, a data set, a cache entry) with bounded nesting.

Python's parser meets ``[[[[...]]]]`` a hundred thousand deep with a ``RecursionError``, which
surfaces as "unexpected RecursionError" far from the file or answer that caused it; and a structure
that parses at depth 900 still breaks the recursive code that walks it later (validation,
redaction, ``json.dumps``). No real answer or data set row nests more than a few levels, so a
generous bound turns both into one :class:`JsonTooDeep` that callers report with their file,
row or endpoint.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 100
"""Nesting levels allowed; answers and rows nest a handful deep."""


class JsonTooDeep(ValueError):
    """JSON nested deeper than :data:`MAX_DEPTH` levels."""

    def __init__(self, depth: int | None = None) -> None:
        shown = f"{depth} levels" if depth is not None else "too deeply to read"
        super().__init__(f"JSON nested {shown} (at most {MAX_DEPTH} are read)")


def depth_of(value: Any, limit: int = MAX_DEPTH) -> int:
    """How deep ``value`` nests (a scalar is 0), counted without recursion; stops counting past ``limit``."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, level = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        level += 1
        deepest = max(deepest, level)
        if deepest > limit:
            return deepest
        stack.extend((child, level) for child in children)
    return deepest


def check_depth(value: Any, limit: int = MAX_DEPTH) -> Any:
    """``value``, if it nests at most ``limit`` deep; else :class:`JsonTooDeep`."""
    depth = depth_of(value, limit)
    if depth > limit:
        raise JsonTooDeep(depth if depth <= limit + 1 else None)
    return value


def loads_bounded(text: str | bytes, limit: int = MAX_DEPTH, **options: Any) -> Any:
    """``json.loads``, with nesting beyond ``limit`` (or beyond the interpreter's stack) as :class:`JsonTooDeep`."""
    try:
        value = json.loads(text, **options)
    except RecursionError:
        raise JsonTooDeep() from None
    if _openings(text) <= limit:
        # Every level opens with a bracket of its own, so the text nests no deeper than it has brackets:
        # counting them (in C) spares walking every value of an answer that is a few levels deep.
        return value
    return check_depth(value, limit)


def _openings(text: str | bytes) -> int:
    """How many ``[`` and ``{`` the text holds, inside strings or not: at least how deep it nests."""
    if isinstance(text, str):
        return text.count("[") + text.count("{")
    return text.count(b"[") + text.count(b"{")
