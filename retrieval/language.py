"""Which language a page is in, so that non-English pages can be flagged, translated or excluded."""

from __future__ import annotations

import re
import threading

_DETECT_LOCK = threading.Lock()
"""langdetect draws from the global ``random`` module, so concurrent calls would change each other's answers."""
_CODE = re.compile(r"^[a-z]{2,3}$")


def normalise_code(value: str | None) -> str | None:
    """``zh-CN`` / ``en_US`` / ``EN`` -> ``zh`` / ``en``; anything else that is not a code -> None."""
    if not value:
        return None
    primary = re.split(r"[-_]", value.strip().lower())[0]
    return primary if _CODE.match(primary) else None


def detect_language(text: str, declared: str | None = None) -> str | None:
    """A statistical guess on the page text, or the page's declared language when the text is short.

    Text wins over the declaration because templates often keep a wrong ``lang`` attribute. The
    guess is seeded so that the same page always gets the same answer; with neither a long enough
    text nor a declaration the answer is None rather than a coin toss.
    """
    sample = text.strip()[:4000]
    if len(sample) >= 200 or (len(sample) >= 20 and not normalise_code(declared)):
        from langdetect import DetectorFactory, LangDetectException, detect

        with _DETECT_LOCK:
            DetectorFactory.seed = 0
            try:
                return normalise_code(detect(sample))
            except LangDetectException:
                pass
    return normalise_code(declared)
