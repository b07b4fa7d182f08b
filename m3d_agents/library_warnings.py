"""Warnings that libraries raise through Python's ``warnings`` module, as the product's own one-line notes.

Pillow warns about images it reads anyway (a damaged EXIF block, a palette image with transparency given
as bytes, an image over its decompression-bomb threshold, a malformed TIFF tag). Python prints such a
warning as two lines, the second a line of Pillow's source, and as often as the library hits it: noise
that reads like a crash before the verdict or the ``error:`` line. Instead each becomes one log record on
the ``m3d.images`` logger, in words that say what the product does about it, once per distinct message in
a process (a batch of a thousand images with damaged EXIF blocks says so once). Warnings from any other
library become one line too, on ``m3d.warnings``.
"""

from __future__ import annotations

import logging
import re
import threading
import warnings
from typing import TextIO

from m3d_agents.errors import one_line

NOTES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Image size \((\d+) pixels\) exceeds limit of (\d+) pixels"),
     "an image declares {0} pixels, over Pillow's decompression-bomb threshold of {1}; it is decoded within "
     "max_decoded_pixels (a larger one at a reduced scale) or refused"),
    (re.compile(r"Corrupt EXIF data\.?\s*(.*)"), "an image's EXIF block is damaged ({0}); its metadata is read as far as it goes"),
    (re.compile(r"Palette images with Transparency expressed in bytes"),
     "an image is a palette image whose transparency is given as bytes; it is read as RGBA"),
    (re.compile(r"Metadata Warning, tag (\d+) had too many entries"),
     "an image's TIFF tag {0} holds more entries than it declares; the tag is skipped"),
    (re.compile(r"(?:Truncated File Read|image file is truncated)"), "an image file is truncated; what could be read is used"),
)

_seen: set[str] = set()
_lock = threading.Lock()


def note_for(message: str, category: type[Warning], filename: str) -> tuple[str, str] | None:
    """The logger and the one-line note for a warning, or None for one already noted in this process."""
    text = one_line(str(message), 300)
    from_pillow = "/PIL/" in filename.replace("\\", "/") or category.__name__ == "DecompressionBombWarning"
    if from_pillow:
        for pattern, words in NOTES:
            found = pattern.search(text)
            if found:
                note = words.format(*(g.strip().rstrip(".") or "no detail" for g in found.groups()))
                break
        else:
            note = f"an image: Pillow, the image library, warned: {text}"
        logger = "m3d.images"
    else:
        module = filename.replace("\\", "/").rsplit("/site-packages/", 1)[-1].split("/", 1)[0].removesuffix(".py")
        note = f"{category.__name__} from {module}: {text}"
        logger = "m3d.warnings"
    with _lock:
        if note in _seen:
            return None
        _seen.add(note)
    return logger, note


def show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: TextIO | None = None,
                 line: str | None = None) -> None:
    """What :func:`install` puts in place of ``warnings.showwarning``."""
    found = note_for(str(message), category, filename)
    if found is not None:
        logging.getLogger(found[0]).warning("%s", found[1])


def install() -> None:
    """Route every warning shown in this process through :func:`note_for` (idempotent).

    Pillow's warnings are shown whatever the process's filters say, once per message, since they are about input."""
    if warnings.showwarning is not show_warning:
        warnings.showwarning = show_warning
        warnings.filterwarnings("always", module=r"PIL(\..*)?")


def reset_seen() -> None:
    """Forget which notes were given, so the next of each is shown again (for tests)."""
    with _lock:
        _seen.clear()
