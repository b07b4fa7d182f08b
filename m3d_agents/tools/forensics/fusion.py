"""One forgery score from several forensic tools, and the registry of pixel forensic methods.

Tools that had nothing to measure (no metadata, no learned model) are left out rather than
counted as a neutral 0.5, so that a missing signal never dilutes a present one.

:func:`run_forensics` is how every caller runs the tools: in one worker of the parser pool
(:mod:`m3d_agents.isolation`), which re-reads the image file there, so a decoder that crashes,
hangs or allocates without end on a hostile file costs that image alone (an
:class:`~m3d_agents.isolation.ItemLost`, an :class:`~m3d_agents.errors.InputError` that names the
image and why). The heat maps come back as PNG bytes; their arrays only when asked (``maps``),
since at full resolution they weigh more than the rest of the answer together.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from m3d_agents.errors import InputError
from m3d_agents.isolation import Item, parse
from m3d_agents.media.images import ImageRef, PreparedImage
from m3d_agents.tools.forensics.base import ForensicResult, heatmap_png
from m3d_agents.tools.forensics.ela import analyse_ela
from m3d_agents.tools.forensics.exif import analyse_exif
from m3d_agents.tools.forensics.jpeg import analyse_jpeg
from m3d_agents.tools.forensics.noise import analyse_noise

NAME = "forensic_fusion"
ForensicTool = Callable[[ImageRef], ForensicResult]

FORENSIC_TOOLS: dict[str, ForensicTool] = {
    "ela": analyse_ela,
    "jpeg": analyse_jpeg,
    "exif": analyse_exif,
    "noise": analyse_noise,
}


def run_forensics(image: PreparedImage, names: Sequence[str] | None = None, *, maps: bool = False) -> dict[str, ForensicResult]:
    """The named tools (all by default) on ``image``, in a parser worker; ``maps`` also returns the heat map arrays."""
    chosen = list(names) if names is not None else list(FORENSIC_TOOLS)
    unknown = [name for name in chosen if name not in FORENSIC_TOOLS]
    if unknown:
        raise InputError("tools", f"unknown forensic tool(s) {', '.join(unknown)}; known: {', '.join(FORENSIC_TOOLS)}")
    item = Item("image", str(image.source), "the forensic tools")
    return parse(item, forensics_here, image.ref(), chosen, maps, deadline="analysis")


def forensics_here(image: ImageRef, names: Sequence[str], maps: bool = True) -> dict[str, ForensicResult]:
    """What :func:`run_forensics` asks a parser worker: each tool's result, without the map arrays unless ``maps``."""
    results = {name: FORENSIC_TOOLS[name](image) for name in names}
    if not maps:
        results = {name: result.model_copy(update={"heatmap": None}) for name, result in results.items()}
    return results


def fuse(results: Sequence[ForensicResult], weights: dict[str, float] | None = None) -> ForensicResult:
    """Weighted mean of the informative scores and of their heat maps."""
    used = [r for r in results if r.informative]
    if not used:
        return ForensicResult(
            tool=NAME, score=0.5, informative=False,
            finding="no forensic tool had anything to measure on this image",
        )
    weight = [float((weights or {}).get(r.tool, 1.0)) for r in used]
    total = sum(weight) or 1.0
    score = sum(w * r.score for w, r in zip(weight, used)) / total
    maps = [(w, r.heatmap) for w, r in zip(weight, used) if r.heatmap is not None]
    fused_map = None
    if maps and len({m.shape for _, m in maps}) == 1:
        fused_map = sum(w * m for w, m in maps) / sum(w for w, _ in maps)
    strongest = max(used, key=lambda r: r.score)
    verdict = "signs of manipulation" if score >= 0.5 else "no strong sign of manipulation"
    return ForensicResult(
        tool=NAME,
        score=round(float(np.clip(score, 0.0, 1.0)), 4),
        finding=f"{verdict} from {len(used)} tool(s); strongest: {strongest.tool} ({strongest.score:.2f})",
        details={"tools": {r.tool: r.score for r in used}},
        heatmap=fused_map,
        heatmap_png=heatmap_png(np.asarray(fused_map)) if fused_map is not None else b"",
    )
