"""Cheap, offline language identification for filtering posts by language.

py3langid ships its model inside the package, so nothing is downloaded. URLs, @mentions and the
``#`` of hashtags are stripped first: in tweets they are mostly Latin-script noise that pulls every
short post towards English.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from m3d_agents.datasets.base import Skips

_NOISE = re.compile(r"https?://\S+|www\.\S+|@\w+|RT\b")


def clean_for_detection(text: str) -> str:
    return _NOISE.sub(" ", text).replace("#", " ").strip()


@lru_cache(maxsize=1)
def _identifier():
    import py3langid

    return py3langid


def detect_language(text: str) -> str | None:
    """An ISO 639-1 code, or None when nothing language-like is left after cleaning."""
    cleaned = clean_for_detection(text)
    if not any(ch.isalpha() for ch in cleaned):
        return None
    code, _score = _identifier().classify(cleaned)
    return str(code)


def parse_languages(value: str | None) -> set[str] | None:
    if not value:
        return None
    return {part.strip().lower() for part in value.split(",") if part.strip()}


class LanguageFilter:
    """Keeps texts in the given languages (all when none are given) and counts the others as skipped."""

    def __init__(self, languages: str | None) -> None:
        self.languages = parse_languages(languages)

    def check(self, text: str, skips: "Skips") -> tuple[bool, str | None]:
        """Whether to keep ``text``, and its detected language (None when no filter is set)."""
        if self.languages is None:
            return True, None
        language = detect_language(text)
        if language not in self.languages:
            skips.add(f"language not in {','.join(sorted(self.languages))}")
            return False, language
        return True, language
