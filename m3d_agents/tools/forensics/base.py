"""What every pixel forensic tool shares: full-resolution pixels, block maps, scores and heat maps.

Forensic traces (JPEG grids, compression residue, sensor noise) live at the original resolution,
so the tools re-open the validated file instead of using the resized copy that agents see, within
the decode budget the image was read under (``max_decoded_pixels``: a larger JPEG is decoded at
a reduced scale, any other format that large is refused) and then at most
:data:`ANALYSIS_MAX_PIXELS`. They run in a worker of the parser pool (see
:func:`m3d_agents.tools.forensics.fusion.run_forensics`), within its time and memory limits. Every
tool expresses its map as a robust z-score against the rest of the same image: "how unusual is
this block here", which makes maps of different tools commensurable and lets them be fused.
"""

from __future__ import annotations

import io
from collections import OrderedDict
from typing import Any

import numpy as np
from PIL import Image
from pydantic import BaseModel, ConfigDict, Field

from m3d_agents.errors import InputError
from m3d_agents.media.images import ImageRef

ANALYSIS_MAX_PIXELS = 12_000_000
HEATMAP_MAX_SIDE = 1024
"""Heat maps are kept, fused and drawn at most this many pixels on a side (float32 values): a full-resolution
float map of a 12-megapixel image would hold about 100 MB per tool, for a picture nobody sees larger."""
Z_SATURATION = 6.0


class ForensicResult(BaseModel):
    """One tool's verdict on one image; ``heatmap_png`` is a greyscale PNG, brighter is more suspicious."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    tool: str
    score: float = Field(ge=0.0, le=1.0, description="how strongly this tool suggests manipulation")
    finding: str = Field(description="one line for the agents")
    informative: bool = Field(True, description="False when the tool had nothing to measure (no metadata, no JPEG)")
    details: dict[str, Any] = Field(default_factory=dict)
    heatmap_png: bytes = Field(b"", exclude=True, repr=False)
    heatmap: np.ndarray | None = Field(None, exclude=True, repr=False,
                                       description="map in [0, 1] at the analysed image's shape, scaled to HEATMAP_MAX_SIDE")

    def for_agents(self) -> str:
        return f"{self.tool}: score {self.score:.2f}; {self.finding}"


class AnalysisImage(BaseModel):
    """Pixels at the resolution the forensic tools work on, plus the file's bytes and format."""

    model_config = ConfigDict(arbitrary_types_allowed=True, frozen=True)

    rgb: np.ndarray
    data: bytes
    format: str
    downscaled: bool

    @property
    def luminance(self) -> np.ndarray:
        r, g, b = (self.rgb[..., i].astype(np.float64) for i in range(3))
        return 0.299 * r + 0.587 * g + 0.114 * b


_pixels: OrderedDict[str, AnalysisImage] = OrderedDict()
PIXEL_CACHE_BYTES = 64_000_000
"""The most that the decoded originals kept for the forensic tools may hold, pixels and file bytes together
(each tool of a sample reads the same image, so the latest is kept however large); least recently used first out."""


def _held(entry: AnalysisImage) -> int:
    return entry.rgb.nbytes + len(entry.data)


def _keep(sha256: str, entry: AnalysisImage, budget: int) -> None:
    _pixels[sha256] = entry
    total = sum(_held(e) for e in _pixels.values())
    while len(_pixels) > 1 and total > budget:
        _, dropped = _pixels.popitem(last=False)
        total -= _held(dropped)


def analysis_image(image: ImageRef) -> AnalysisImage:
    """Decode the original file again, within its decode budget and :data:`ANALYSIS_MAX_PIXELS` (cached by content hash)."""
    cached = _pixels.get(image.sha256)
    if cached is not None:
        _pixels.move_to_end(image.sha256)
        return cached
    try:
        data = image.file.read_bytes()
        decoded = Image.open(io.BytesIO(data))
        width, height = decoded.size
        reduced = width * height > image.max_decoded_pixels
        if reduced and decoded.format != "JPEG":
            raise InputError("image", f"{image.source} has {width}x{height} pixels; the forensic tools decode at most "
                                      f"max_decoded_pixels ({image.max_decoded_pixels}) and only a JPEG at a reduced scale")
        if reduced:
            scale = next((r for r in (2, 4, 8) if width * height <= image.max_decoded_pixels * r * r), 8)
            decoded.draft("RGB", (-(-width // scale), -(-height // scale)))
        decoded.load()
    except (OSError, SyntaxError, ValueError, EOFError, Image.DecompressionBombError) as exc:
        raise InputError("image", f"{image.source} can no longer be read for forensic analysis: {exc}") from exc
    rgb_image = decoded.convert("RGB")
    downscaled = reduced or rgb_image.width * rgb_image.height > ANALYSIS_MAX_PIXELS
    if rgb_image.width * rgb_image.height > ANALYSIS_MAX_PIXELS:
        factor = (ANALYSIS_MAX_PIXELS / (rgb_image.width * rgb_image.height)) ** 0.5
        size = (max(8, int(rgb_image.width * factor)), max(8, int(rgb_image.height * factor)))
        rgb_image = rgb_image.resize(size, Image.Resampling.BOX)
    result = AnalysisImage(rgb=np.asarray(rgb_image), data=data, format=image.format, downscaled=downscaled)
    _keep(image.sha256, result, PIXEL_CACHE_BYTES)
    return result


def block_reduce(values: np.ndarray, block: int, reducer: str = "mean") -> np.ndarray:
    """Reduce a 2-D map over non-overlapping ``block`` x ``block`` tiles (the ragged edge is dropped)."""
    rows, cols = values.shape[0] // block, values.shape[1] // block
    if rows == 0 or cols == 0:
        raise InputError("image", f"{values.shape[1]}x{values.shape[0]} pixels is too small for {block}-pixel blocks")
    tiles = values[: rows * block, : cols * block].reshape(rows, block, cols, block)
    if reducer == "median":
        return np.median(tiles.transpose(0, 2, 1, 3).reshape(rows, cols, -1), axis=2)
    return tiles.mean(axis=(1, 3))


def heatmap_shape(shape: tuple[int, int]) -> tuple[int, int]:
    """The shape a heat map of an image of ``shape`` (rows, columns) is kept at: the same, or scaled to :data:`HEATMAP_MAX_SIDE`."""
    rows, cols = shape
    if max(rows, cols) <= HEATMAP_MAX_SIDE:
        return rows, cols
    scale = HEATMAP_MAX_SIDE / max(rows, cols)
    return max(1, round(rows * scale)), max(1, round(cols * scale))


def expand_blocks(blocks: np.ndarray, block: int, shape: tuple[int, int]) -> np.ndarray:
    """A block map as a heat map of an image of ``shape``, at :func:`heatmap_shape`: each cell takes the block
    under its centre, and the ragged edge repeats the nearest block."""
    rows, cols = heatmap_shape(shape)
    at_row = np.minimum(((np.arange(rows) + 0.5) * shape[0] / rows).astype(np.int64) // block, blocks.shape[0] - 1)
    at_col = np.minimum(((np.arange(cols) + 0.5) * shape[1] / cols).astype(np.int64) // block, blocks.shape[1] - 1)
    return blocks.astype(np.float32)[np.ix_(at_row, at_col)]


def robust_z(values: np.ndarray) -> np.ndarray:
    """How far each value sits above the image's typical value, in robust standard deviations."""
    median = float(np.median(values))
    mad = float(np.median(np.abs(values - median))) * 1.4826
    spread = mad if mad > 1e-9 else float(np.std(values)) or 1.0
    return (values - median) / spread


def unit_map(z: np.ndarray) -> np.ndarray:
    """Anomaly z-scores to [0, 1]; below the typical value counts as not suspicious."""
    return np.clip(z / Z_SATURATION, 0.0, 1.0)


def tail_strength(z: np.ndarray, fraction: float = 0.02) -> float:
    """Mean z of the most anomalous ``fraction`` of blocks: large when a region stands out."""
    flat = np.sort(z.ravel())
    count = max(1, int(round(flat.size * fraction)))
    return float(flat[-count:].mean())


def logistic(value: float, centre: float, width: float) -> float:
    return float(1.0 / (1.0 + np.exp(-(value - centre) / width)))


def heatmap_png(unit: np.ndarray) -> bytes:
    """Encode a [0, 1] map as a greyscale PNG no larger than :data:`HEATMAP_MAX_SIDE`."""
    picture = Image.fromarray((np.clip(unit, 0.0, 1.0) * 255).astype(np.uint8), mode="L")
    if max(picture.size) > HEATMAP_MAX_SIDE:
        picture.thumbnail((HEATMAP_MAX_SIDE, HEATMAP_MAX_SIDE), Image.Resampling.BILINEAR)
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG")
    return buffer.getvalue()


def block_result(
    tool: str, z_blocks: np.ndarray, block: int, shape: tuple[int, int], score: float, finding: str, **details: Any
) -> ForensicResult:
    unit = expand_blocks(unit_map(z_blocks), block, shape)
    return ForensicResult(
        tool=tool,
        score=round(min(1.0, max(0.0, score)), 4),
        finding=finding,
        details=details,
        heatmap=unit,
        heatmap_png=heatmap_png(unit),
    )


def anomaly_result(
    tool: str, z: np.ndarray, block: int, shape: tuple[int, int], centre: float, width: float,
    flagged: str, clean: str, **details: Any,
) -> ForensicResult:
    """Score a z-map by its most anomalous blocks; ``flagged`` may use ``{area}``, the suspicious share."""
    strength = tail_strength(z)
    score = logistic(strength, centre=centre, width=width)
    area = suspicious_area(z)
    finding = flagged.format(area=f"{area:.0%}") if score >= 0.5 else clean
    return block_result(tool, z, block, shape, score, finding,
                        tail_z=round(strength, 3), suspicious_area=round(area, 4), **details)


def jpeg_roundtrip(rgb: np.ndarray, quality: int) -> np.ndarray:
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, format="JPEG", quality=quality)
    buffer.seek(0)
    return np.asarray(Image.open(buffer).convert("RGB"))


def suspicious_area(z_blocks: np.ndarray, threshold: float = 3.0) -> float:
    return float((z_blocks > threshold).mean())
