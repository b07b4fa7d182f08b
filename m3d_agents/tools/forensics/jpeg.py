"""JPEG evidence: the quantisation tables, an estimate of double compression, and JPEG ghosts.

- The tables say which encoder and quality saved the file last (cameras, editors and social
  networks each have their habits).
- Compressing twice with different tables leaves periodic gaps and peaks in the histograms of the
  DCT coefficients; a smooth histogram is what one compression gives.
- A region that was compressed earlier at a lower quality shows a "ghost": re-saving at such a
  quality changes it less, relative to its other errors, than it changes the rest of the image.
"""

from __future__ import annotations

import io

import numpy as np
from PIL import Image
from scipy import fft

from m3d_agents.media.images import ImageRef
from m3d_agents.tools.forensics.base import (
    AnalysisImage,
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

NAME = "jpeg_analysis"
GHOST_QUALITIES = (50, 60, 70, 80, 90)
GHOST_BLOCK = 16
LOW_QUALITIES = 2
_LOW_FREQUENCIES = ((0, 1), (1, 0), (1, 1), (0, 2), (2, 0), (1, 2), (2, 1))

_IJG_LUMINANCE = np.array(
    [16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55, 14, 13, 16, 24, 40, 57, 69, 56,
     14, 17, 22, 29, 51, 87, 80, 62, 18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
     49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99],
    dtype=np.float64,
)


def ijg_table(quality: int) -> np.ndarray:
    scale = 5000 / quality if quality < 50 else 200 - 2 * quality
    return np.clip(np.floor((_IJG_LUMINANCE * scale + 50) / 100), 1, 255)


def quantisation_tables(data: bytes) -> dict[int, list[int]]:
    """The file's tables in natural (row-major) order, or {} for anything that is not a JPEG."""
    try:
        image = Image.open(io.BytesIO(data))
    except OSError:
        return {}
    tables = getattr(image, "quantization", None) or {}
    return {int(k): [int(v) for v in table] for k, table in tables.items()}


def estimate_quality(luminance_table: list[int]) -> tuple[int, float]:
    """The IJG quality whose table is closest, and the mean absolute difference (0 = a standard table)."""
    table = np.asarray(luminance_table, dtype=np.float64)
    errors = [(float(np.abs(ijg_table(q) - table).mean()), q) for q in range(1, 101)]
    error, quality = min(errors)
    return quality, error


def double_compression_periodicity(data: bytes, luminance_table: list[int]) -> float | None:
    """Roughness of the low-frequency DCT histograms: near 0 for one compression, larger for two.

    The coefficients are recomputed from the decoded luminance on the 8x8 grid and divided by the
    last table, so they sit near integers; a second compression shows up as bins that alternate.
    """
    y = np.asarray(Image.open(io.BytesIO(data)).convert("YCbCr"), dtype=np.float64)[..., 0] - 128.0
    rows, cols = y.shape[0] // 8, y.shape[1] // 8
    if rows * cols < 64:
        return None
    blocks = y[: rows * 8, : cols * 8].reshape(rows, 8, cols, 8).transpose(0, 2, 1, 3)
    coefficients = fft.dctn(blocks, axes=(2, 3), norm="ortho")
    table = np.asarray(luminance_table, dtype=np.float64).reshape(8, 8)
    roughness, weights = [], []
    for u, v in _LOW_FREQUENCIES:
        k = np.abs(np.rint(coefficients[:, :, u, v] / table[u, v])).astype(np.int64).ravel()
        histogram = np.bincount(k[k <= 16], minlength=17).astype(np.float64)[1:]
        middle, neighbours = histogram[1:-1], (histogram[:-2] + histogram[2:]) / 2
        mass = float(middle.sum())
        if mass < 50:
            continue
        roughness.append(float(np.abs(middle - neighbours).sum() / (middle + neighbours).sum()))
        weights.append(mass)
    if not roughness:
        return None
    return float(np.average(roughness, weights=weights))


def ghost_blocks(rgb: np.ndarray, block: int = GHOST_BLOCK) -> np.ndarray:
    """Per block, how little re-saving at low qualities changes it, relative to its change over all qualities.

    Blocks that went through a low-quality compression before barely move when re-saved at such a
    quality (the ghost); blocks that only saw the last compression move a lot.
    """
    errors = []
    for quality in GHOST_QUALITIES:
        # Integer squares (exact, as in float64) at a quarter of float64's memory: three full-size colour arrays per
        # quality are what this tool's peak is made of.
        diff = (rgb.astype(np.int16) - jpeg_roundtrip(rgb, quality).astype(np.int16)).astype(np.int32) ** 2
        errors.append(block_reduce(diff.mean(axis=2), block))
    stack = np.stack(errors)
    return -stack[:LOW_QUALITIES].mean(axis=0) / (stack.mean(axis=0) + 1.0)


def _describe_tables(pixels: AnalysisImage) -> tuple[dict[str, object], list[str], float]:
    tables = quantisation_tables(pixels.data) if pixels.format == "JPEG" else {}
    if not tables:
        return {"jpeg": False}, [f"not a JPEG ({pixels.format}): no quantisation tables"], 0.0
    quality, mismatch = estimate_quality(tables[0])
    details: dict[str, object] = {"jpeg": True, "tables": len(tables), "estimated_quality": quality,
                                  "table_mismatch": round(mismatch, 2)}
    notes = [f"JPEG, estimated quality {quality}" + ("" if mismatch < 0.5 else " (non-standard tables)")]
    periodicity = None if pixels.downscaled else double_compression_periodicity(pixels.data, tables[0])
    if periodicity is None:
        return details, notes, 0.0
    details["dct_periodicity"] = round(periodicity, 4)
    double = logistic(periodicity, centre=0.3, width=0.06)
    details["double_compression"] = round(double, 3)
    notes.append("DCT histograms suggest double compression" if double >= 0.5 else "no sign of double compression")
    return details, notes, double


def analyse_jpeg(image: ImageRef) -> ForensicResult:
    pixels = analysis_image(image)
    details, notes, double = _describe_tables(pixels)
    z = robust_z(ghost_blocks(pixels.rgb))
    strength = tail_strength(z)
    ghost = logistic(strength, centre=6.0, width=1.5)
    area = suspicious_area(z)
    if ghost >= 0.5:
        notes.append(f"a JPEG ghost covers {area:.0%} of the image (a region compressed earlier at another quality)")
    return block_result(
        NAME, z, GHOST_BLOCK, pixels.rgb.shape[:2], max(double, ghost), "; ".join(notes),
        ghost_tail_z=round(strength, 3), ghost_area=round(area, 4), **details,
    )
