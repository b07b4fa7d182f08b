"""T_image: what each image of a post shows, in words, made once per sample and shared.

AgentM3D gives its image and cross-modal agents a grounded description of the image from a
vision model (eqs. 6-7). On a vision backend that is the ``grounded_description`` tool. A
text-only backend (the embedded default) cannot look, and a forensic report is not a description
(it belongs to the image critic alone), so there the text in the image (OCR) and the file's own
metadata stand in: what can be read off the file without seeing it.
"""

from __future__ import annotations

import asyncio

from m3d_agents.backends.factory import Backend
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.media.images import PreparedImage, PreparedSample
from m3d_agents.media.post_content import basic_facts
from m3d_agents.tools.analysis.ocr import read_text
from m3d_agents.tools.analysis.vlm import grounded_description
from m3d_agents.tools.forensics.exif import read_metadata

_FIELDS = (("make", "camera make"), ("model", "camera model"), ("original", "taken"), ("software", "software"),
           ("creator_tool", "made with"))


def file_metadata(image: PreparedImage) -> str:
    """The provenance fields of the image file (camera, date, software, GPS), or that it has none."""
    try:
        fields = read_metadata(image.source.read_bytes())
    except (OSError, ValueError) as exc:
        return f"File metadata: unreadable ({exc})"
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


__all__ = ["file_metadata", "image_descriptions", "without_vision"]
