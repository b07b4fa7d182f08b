"""Error level analysis: re-compress once and see which regions change by an unusual amount.

A region pasted from another source, or retouched, usually carries a different compression
history from its surroundings, so its error level after one more JPEG pass stands out. Texture
also raises error levels, which is why the map is read relative to the rest of the same image.
"""

from __future__ import annotations

import numpy as np

from m3d_agents.images import PreparedImage
from m3d_agents.tools.forensics_base import (
    ForensicResult,
    analysis_image,
    block_reduce,
    block_result,
    jpeg_roundtrip,
    logistic,
    robust_z,
    suspicious_area,
    tail_strength,
)

NAME = "error_level_analysis"
QUALITY = 90
BLOCK = 8


def ela_blocks(rgb: np.ndarray, quality: int = QUALITY, block: int = BLOCK) -> np.ndarray:
    """Mean absolute re-compression error per block, taking the worst colour channel per pixel."""
    error = np.abs(rgb.astype(np.int16) - jpeg_roundtrip(rgb, quality).astype(np.int16)).max(axis=2)
    return block_reduce(error.astype(np.float64), block)


def analyse_ela(image: PreparedImage) -> ForensicResult:
    pixels = analysis_image(image)
    blocks = ela_blocks(pixels.rgb)
    z = robust_z(blocks)
    strength = tail_strength(z)
    score = logistic(strength, centre=6.0, width=1.5)
    area = suspicious_area(z)
    if score >= 0.5:
        finding = f"a region covering {area:.0%} of the image has unusually high error levels after re-compression"
    else:
        finding = "error levels after re-compression are fairly uniform across the image"
    return block_result(
        NAME, z, BLOCK, pixels.rgb.shape[:2], score, finding,
        quality=QUALITY, tail_z=round(strength, 3), suspicious_area=round(area, 4), mean_error=round(float(blocks.mean()), 3),
    )
