"""One forgery score from several forensic tools, and the registry of pixel forensic methods.

Tools that had nothing to measure (no metadata, no learned model) are left out rather than
counted as a neutral 0.5, so that a missing signal never dilutes a present one.
"""

from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from m3d_agents.media.images import PreparedImage
from m3d_agents.tools.forensics.base import ForensicResult, heatmap_png
from m3d_agents.tools.forensics.ela import analyse_ela
from m3d_agents.tools.forensics.exif import analyse_exif
from m3d_agents.tools.forensics.jpeg import analyse_jpeg
from m3d_agents.tools.forensics.noise import analyse_noise

NAME = "forensic_fusion"
ForensicTool = Callable[[PreparedImage], ForensicResult]

FORENSIC_TOOLS: dict[str, ForensicTool] = {
    "ela": analyse_ela,
    "jpeg": analyse_jpeg,
    "exif": analyse_exif,
    "noise": analyse_noise,
}


def run_forensics(image: PreparedImage, names: Sequence[str] | None = None) -> dict[str, ForensicResult]:
    from m3d_agents.errors import InputError

    chosen = list(names) if names is not None else list(FORENSIC_TOOLS)
    unknown = [name for name in chosen if name not in FORENSIC_TOOLS]
    if unknown:
        raise InputError("tools", f"unknown forensic tool(s) {', '.join(unknown)}; known: {', '.join(FORENSIC_TOOLS)}")
    return {name: FORENSIC_TOOLS[name](image) for name in chosen}


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
