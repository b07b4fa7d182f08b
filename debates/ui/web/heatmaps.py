"""Forensic heat maps of a post's images, for the verdict of the live page.

The same pixel forensic tools the agents' findings come from (:mod:`m3d_agents.tools.forensics`)
run on each image (in the server's parser pool), and their maps (brighter is more suspicious) are
kept as PNG bytes that the page serves; the fused map comes first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from m3d_agents.errors import InputError
from m3d_agents.media.images import PreparedImage
from m3d_agents.tools.forensics.base import ForensicResult
from m3d_agents.tools.forensics.fusion import fuse, run_forensics


@dataclass
class ImageForensics:
    index: int
    results: list[ForensicResult] = field(default_factory=list)
    error: str | None = None

    def png(self, tool: str) -> bytes | None:
        for result in self.results:
            if result.tool == tool and result.heatmap_png:
                return result.heatmap_png
        return None


def analyse_images(images: list[PreparedImage]) -> list[ImageForensics]:
    """Every tool's score, finding and heat map for each image; a tool that fails is reported, not raised."""
    found = []
    for index, image in enumerate(images):
        try:
            results = run_forensics(image, maps=True)
        except InputError as exc:
            found.append(ImageForensics(index, error=exc.problem))
            continue
        found.append(ImageForensics(index, [fuse(list(results.values())), *results.values()]))
    return found
