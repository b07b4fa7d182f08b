"""An image put into words, for the models and agents that cannot look at it themselves.

Two kinds of text stand for an image:

- *findings*: what the forensic tools measured and what OCR read, appended to every text-only
  prompt that shows the image (the describers of :mod:`m3d_agents.media.post_content`). They are
  registered explicitly (:func:`enable_image_describers`) rather than as a side effect of an
  import, so a run can switch forensics or OCR off and tests stay independent; each is cached by
  image hash, because every agent of every round describes the same image again;
- *descriptions* (``T_image``): what each image of a post shows, made once per sample and shared
  (:func:`image_descriptions`). AgentM3D gives its image and cross-modal agents a grounded
  description from a vision model (eqs. 6-7): on a vision backend that is the
  ``grounded_description`` tool. A text-only backend cannot look, and a forensic report is not a
  description (it belongs to the image critic alone), so there the text in the image (OCR) and the
  file's own metadata stand in: what can be read off the file without seeing it.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from typing import Callable

from m3d_agents.backends.factory import Backend
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.errors import InputError
from m3d_agents.media.images import PreparedImage, PreparedSample
from m3d_agents.media.post_content import (
    ImageDescriber, basic_facts, register_describer, registered_describers, unregister_describer,
)
from m3d_agents.tools.analysis.ocr import read_text
from m3d_agents.tools.analysis.vlm import grounded_description
from m3d_agents.tools.forensics.exif import file_metadata_fields
from m3d_agents.tools.forensics.fusion import fuse, run_forensics

_CACHE_LIMIT = 128
_FIELDS = (("make", "camera make"), ("model", "camera model"), ("original", "taken"), ("software", "software"),
           ("creator_tool", "made with"))


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


def file_metadata(image: PreparedImage) -> str:
    """The provenance fields of the image file (camera, date, software, GPS), or that it has none."""
    try:
        fields = file_metadata_fields(image)
    except InputError as exc:
        return f"File metadata: unreadable ({exc.problem})"
    found = [f"{label} {fields[key]}" for key, label in _FIELDS if fields.get(key)]
    if fields.get("gps"):
        found.append("GPS position recorded")
    return "File metadata: " + ("; ".join(found) if found else "none (often stripped by social networks)")


def without_vision(image: PreparedImage) -> str:
    """What a model that cannot see the image can be told about it: size and format, metadata, text in it."""
    return "\n".join([basic_facts(image), file_metadata(image), read_text(image).for_agents()])


async def image_descriptions(prepared: PreparedSample, backend: Backend, ledger: UsageLedger) -> list[str]:
    """One description per image: the vision model's on a vision backend, else OCR and metadata."""
    if not backend.vision:
        return [without_vision(image) for image in prepared.images]
    looks = await asyncio.gather(*(grounded_description(image, backend, ledger, agent="grounded_description")
                                   for image in prepared.images))
    descriptions = []
    for image, look in zip(prepared.images, looks):
        if look.available and not look.error and look.text.strip():
            descriptions.append(look.text.strip())
        else:
            descriptions.append(f"(no description from the vision model: {look.error})\n{without_vision(image)}")
    return descriptions
