"""Error level analysis: re-compress once and see which regions change by an unusual amount.

A region pasted from another source, or retouched, usually carries a different compression
history from its surroundings, so its error level after one more JPEG pass stands out. Texture
also raises error levels, which is why the map is read relative to the rest of the same image.
"""

from __future__ import annotations

import numpy as np

from m3d_agents.media.images import ImageRef
from m3d_agents.tools.forensics.base import ForensicResult, analysis_image, anomaly_result, block_reduce, jpeg_roundtrip, robust_z

NAME = "error_level_analysis"
QUALITY = 90
BLOCK = 8


def ela_blocks(rgb: np.ndarray, quality: int = QUALITY, block: int = BLOCK) -> np.ndarray:
    """Mean absolute re-compression error per block, taking the worst colour channel per pixel."""
    error = np.abs(rgb.astype(np.int16) - jpeg_roundtrip(rgb, quality).astype(np.int16)).max(axis=2)
    return block_reduce(error.astype(np.float64), block)


def analyse_ela(image: ImageRef) -> ForensicResult:
    pixels = analysis_image(image)
    blocks = ela_blocks(pixels.rgb)
    return anomaly_result(
        NAME, robust_z(blocks), BLOCK, pixels.rgb.shape[:2], centre=6.0, width=1.5,
        flagged="a region covering {area} of the image has unusually high error levels after re-compression",
        clean="error levels after re-compression are fairly uniform across the image",
        quality=QUALITY, mean_error=round(float(blocks.mean()), 3),
    )
