"""Noise residual inconsistency: spliced regions often come from a camera or a scaling with other noise.

The residual is what a 3x3 median filter removes; its local strength (median absolute value per
block, which edges disturb less than a mean) should be similar across one photograph.
"""

from __future__ import annotations

import numpy as np
from scipy import ndimage

from m3d_agents.media.images import ImageRef
from m3d_agents.tools.forensics.base import ForensicResult, analysis_image, anomaly_result, block_reduce, robust_z

NAME = "noise_inconsistency"
BLOCK = 16


def noise_blocks(luminance: np.ndarray, block: int = BLOCK) -> np.ndarray:
    """Log of the local noise level (robust sigma of the median-filter residual) per block."""
    residual = luminance - ndimage.median_filter(luminance, size=3)
    sigma = block_reduce(np.abs(residual), block, reducer="median") * 1.4826
    return np.log(sigma + 0.5)


def analyse_noise(image: ImageRef) -> ForensicResult:
    pixels = analysis_image(image)
    return anomaly_result(
        NAME, np.abs(robust_z(noise_blocks(pixels.luminance))), BLOCK, pixels.rgb.shape[:2], centre=4.0, width=1.0,
        flagged="the noise level differs markedly in {area} of the image, as if parts came from another source",
        clean="the noise level is consistent across the image",
    )
