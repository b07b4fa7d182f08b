"""EXIF and XMP metadata: which software saved the image, when, with which camera, and GPS.

Metadata is easy to strip or forge, so it only ever raises suspicion (an editor's name, a
modification after capture); its absence is reported as uninformative, since social networks strip
it from everything. Metadata has no spatial extent, so the heat map is flat at the score.
"""

from __future__ import annotations

import io
import re
from datetime import datetime

import numpy as np
from PIL import Image

from m3d_agents.errors import InputError
from m3d_agents.isolation import Item, parse
from m3d_agents.media.images import ImageRef, PreparedImage
from m3d_agents.tools.forensics.base import ForensicResult, analysis_image, heatmap_png, heatmap_shape

NAME = "metadata_analysis"
EDITORS = (
    "photoshop", "gimp", "lightroom", "paint.net", "pixlr", "snapseed", "affinity", "picsart", "canva",
    "facetune", "meitu", "photoscape", "fotor", "pixelmator", "capture one", "luminar", "darktable",
)
_EXIF_IFD, _GPS_IFD = 0x8769, 0x8825
_TAGS = {"make": 271, "model": 272, "software": 305, "modified": 306}
_ORIGINAL, _DIGITISED = 36867, 36868
_XMP_FIELDS = {
    "creator_tool": r"(?:xmp:|xap:)?CreatorTool(?:=\"|>)([^\"<]+)",
    "software_agent": r"stEvt:softwareAgent(?:=\"|>)([^\"<]+)",
    "xmp_modified": r"xmp:ModifyDate(?:=\"|>)([^\"<]+)",
    "xmp_created": r"xmp:CreateDate(?:=\"|>)([^\"<]+)",
}


def _exif_date(value: object) -> datetime | None:
    try:
        return datetime.strptime(str(value).strip("\x00 ")[:19], "%Y:%m:%d %H:%M:%S")
    except ValueError:
        return None


def file_metadata_fields(image: PreparedImage) -> dict[str, object]:
    """:func:`read_metadata` of the image's file, read in a worker of the parser pool (EXIF blocks come from outside)."""
    return parse(Item("image", str(image.source), "the metadata reader"), _metadata_here, image.ref())


def _metadata_here(image: ImageRef) -> dict[str, object]:
    try:
        data = image.file.read_bytes()
    except OSError as exc:
        raise InputError("image", f"{image.source} can no longer be read: {exc.strerror or exc}") from exc
    try:
        return read_metadata(data)
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise InputError("image", f"{image.source} has metadata that cannot be read: {' '.join(str(exc).split())[:200]}") from exc


def read_metadata(data: bytes) -> dict[str, object]:
    """The fields that matter for provenance, from EXIF, XMP and PNG text chunks."""
    image = Image.open(io.BytesIO(data))
    exif = image.getexif()
    fields: dict[str, object] = {}
    for key, tag in _TAGS.items():
        if exif.get(tag):
            fields[key] = str(exif[tag]).strip("\x00 ")
    sub = exif.get_ifd(_EXIF_IFD)
    for key, tag in (("original", _ORIGINAL), ("digitised", _DIGITISED)):
        if sub.get(tag):
            fields[key] = str(sub[tag]).strip("\x00 ")
    fields["gps"] = bool(exif.get_ifd(_GPS_IFD))
    start = data.find(b"<x:xmpmeta")
    if start >= 0:
        end = data.find(b"</x:xmpmeta>", start)
        xmp = data[start : end if end > 0 else start + 65536].decode("utf-8", "replace")
        fields["xmp"] = True
        for key, pattern in _XMP_FIELDS.items():
            found = re.findall(pattern, xmp)
            if found:
                fields[key] = sorted(set(found)) if key == "software_agent" else found[0]
    for key in ("Software", "software"):
        if key in image.info and "software" not in fields:
            fields["software"] = str(image.info[key])
    return fields


def _editors_named(fields: dict[str, object]) -> list[str]:
    texts = [str(fields.get("software", "")), str(fields.get("creator_tool", "")), *map(str, fields.get("software_agent", []) or [])]  # type: ignore[call-overload]
    joined = " ".join(texts).lower()
    return [name for name in EDITORS if name in joined]


def judge_metadata(fields: dict[str, object]) -> tuple[float, bool, str]:
    """Score, whether there was anything to judge, and the one-line finding."""
    present = {k: v for k, v in fields.items() if k != "gps" and v}
    if not present and not fields.get("gps"):
        return 0.5, False, "no EXIF or XMP metadata (often stripped by social networks; says nothing either way)"
    parts, score = [], 0.15
    camera = " ".join(str(fields[k]) for k in ("make", "model") if fields.get(k))
    parts.append(f"camera {camera}" if camera else "no camera make or model")
    if fields.get("software"):
        parts.append(f"software {fields['software']}")
    editors = _editors_named(fields)
    if editors:
        score = 0.85
        parts.append(f"edited with {', '.join(editors)}")
    original, modified = _exif_date(fields.get("original")), _exif_date(fields.get("modified"))
    if original:
        parts.append(f"taken {original:%Y-%m-%d %H:%M}")
    if original and modified and modified > original:
        score = max(score, 0.65)
        parts.append(f"modified later, {modified:%Y-%m-%d %H:%M}")
    parts.append("GPS data present" if fields.get("gps") else "no GPS data")
    return score, True, "; ".join(parts)


def analyse_exif(image: ImageRef) -> ForensicResult:
    pixels = analysis_image(image)
    fields = read_metadata(pixels.data)
    score, informative, finding = judge_metadata(fields)
    flat = np.full(heatmap_shape(pixels.rgb.shape[:2]), score, dtype=np.float32)
    return ForensicResult(
        tool=NAME, score=score, finding=finding, informative=informative, details=fields,
        heatmap=flat, heatmap_png=heatmap_png(flat),
    )
