"""Which language a text is in: posts (to filter a data set by language) and web pages (to flag,
translate or exclude what is not in English), with one library for both.

py3langid ships its model inside the package, so nothing is downloaded, and it is deterministic:
the same text always gets the same answer, with no global random state to guard. URLs,
@mentions and the ``#`` of hashtags are stripped first: in tweets they are mostly Latin-script
noise that pulls every short post towards English.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from m3d_agents.datasets.base import Skips

_NOISE = re.compile(r"https?://\S+|www\.\S+|@\w+|RT\b")
_CODE = re.compile(r"^[a-z]{2,3}$")
PAGE_TEXT_CHARS = 4000
"""How much of a page is read to identify its language."""


def clean_for_detection(text: str) -> str:
    return _NOISE.sub(" ", text).replace("#", " ").strip()


@lru_cache(maxsize=1)
def _identifier() -> Any:
    import py3langid

    return py3langid


def normalise_code(value: str | None) -> str | None:
    """``zh-CN`` / ``en_US`` / ``EN`` -> ``zh`` / ``en``; anything else that is not a code -> None."""
    if not value:
        return None
    primary = re.split(r"[-_]", value.strip().lower())[0]
    return primary if _CODE.match(primary) else None


def detect_language(text: str) -> str | None:
    """An ISO 639-1 code, or None when nothing language-like is left after cleaning."""
    cleaned = clean_for_detection(text)
    if not any(ch.isalpha() for ch in cleaned):
        return None
    code, _score = _identifier().classify(cleaned)
    return normalise_code(str(code))


def page_language(text: str, declared: str | None = None) -> str | None:
    """A web page's language: identified from its text, or the page's declared language when the text is short.

    Text wins over the declaration because templates often keep a wrong ``lang`` attribute. With
    neither a long enough text nor a declaration the answer is None rather than a guess.
    """
    sample = text.strip()[:PAGE_TEXT_CHARS]
    if len(sample) >= 200 or (len(sample) >= 20 and not normalise_code(declared)):
        found = detect_language(sample)
        if found is not None:
            return found
    return normalise_code(declared)


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
