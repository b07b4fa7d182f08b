"""Tool findings as text about an image, for backends that cannot see it.

Registration is explicit (agents call :func:`enable_image_describers`) rather than a side effect of
importing, so a run can switch the forensics or OCR text off, and tests stay independent. Results
are cached by image hash because every agent of every round describes the same image again.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Callable

from m3d_agents.media.post_content import ImageDescriber, register_describer, registered_describers, unregister_describer
from m3d_agents.errors import InputError
from m3d_agents.media.images import PreparedImage
from m3d_agents.tools.forensics.fusion import fuse, run_forensics
from m3d_agents.tools.analysis.ocr import read_text

_CACHE_LIMIT = 128


def _cached(describe: Callable[[PreparedImage], str]) -> ImageDescriber:
    cache: OrderedDict[str, str] = OrderedDict()

    def describer(image: PreparedImage) -> str:
        if image.sha256 not in cache:
            cache[image.sha256] = describe(image)
            if len(cache) > _CACHE_LIMIT:
                cache.popitem(last=False)
        return cache[image.sha256]

    describer.__name__ = describe.__name__
    return describer


def _forensics(image: PreparedImage) -> str:
    try:
        results = run_forensics(image)
    except InputError as exc:
        return f"Forensic tools could not analyse the image: {exc.problem}"
    fused = fuse(list(results.values()))
    lines = [f"Forensics (measured, not seen): fused forgery score {fused.score:.2f}"]
    lines += [f"- {r.for_agents()}" for r in results.values()]
    return "\n".join(lines)


def _ocr(image: PreparedImage) -> str:
    return read_text(image).for_agents()


forensic_describer = _cached(_forensics)
ocr_describer = _cached(_ocr)


def enable_image_describers(forensics: bool = True, ocr: bool = True) -> None:
    """Make text-only prompts carry the forensic and OCR findings (idempotent; False removes one)."""
    for describer, wanted in ((forensic_describer, forensics), (ocr_describer, ocr)):
        if wanted:
            register_describer(describer)
        elif describer in registered_describers():
            unregister_describer(describer)
