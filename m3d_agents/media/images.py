"""Opening, checking and normalising images, once per distinct file content.

Images arrive from datasets and users, so every way a file can be wrong (missing, not an image,
truncated, a decompression bomb, too large) becomes an :class:`InputError` naming the field,
instead of a PIL exception deep inside an agent.

What decoding may cost is bounded three ways: per image (``max_decoded_pixels``: a larger JPEG is
decoded at a reduced scale, which its format allows, and any other format that large is refused
before its pixels are decoded), across concurrent samples (every decode runs in a worker of the
run's parser pool, :mod:`m3d_agents.isolation`: at most one image per worker at a time, within the
worker's time and memory limits, so a decoder that crashes or hangs costs that image alone), and
in the cache of prepared images (bounded in bytes, ``image_cache_mb``: everything an entry holds,
its pixels and the encoding that messages send of it, not the number of images).
"""

from __future__ import annotations

import hashlib
import io
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from PIL import Image, ImageFile, UnidentifiedImageError

from m3d_agents.errors import InputError
from m3d_agents.isolation import Item, parse
from m3d_agents.media.files import checked_size
from m3d_agents.sample import InputLimits, Sample

if TYPE_CHECKING:
    from m3d_agents.media.video import VideoInfo

SUPPORTED_FORMATS = {"JPEG", "PNG", "WEBP", "GIF", "BMP", "TIFF"}


@dataclass(frozen=True)
class PreparedImage:
    """An RGB image scaled to the configured maximum side, keyed by the hash of the file bytes."""

    source: Path
    sha256: str
    image: Image.Image
    original_size: tuple[int, int]
    format: str
    max_decoded_pixels: int = InputLimits.model_fields["max_decoded_pixels"].default
    """The decode budget it was read under; the forensic tools read the original file within the same."""

    def ref(self) -> "ImageRef":
        """What a parser worker needs to read this image's file again (the forensic tools do)."""
        return ImageRef(file=self.source.resolve(), source=str(self.source), sha256=self.sha256, format=self.format,
                        max_decoded_pixels=self.max_decoded_pixels)

    def png_bytes(self) -> bytes:
        buffer = io.BytesIO()
        self.image.save(buffer, format="PNG")
        return buffer.getvalue()


@dataclass(frozen=True)
class ImageRef:
    """An image file as a parser worker is sent it: where it is, and how it was read, without its pixels."""

    file: Path
    """The absolute path (a worker's working folder is not the caller's)."""
    source: str
    """The path as the user gave it, for messages."""
    sha256: str
    format: str
    max_decoded_pixels: int


@dataclass(frozen=True)
class PreparedSample:
    sample: Sample
    images: list[PreparedImage]
    descriptions: list[str] = field(default_factory=list)
    """What each image shows, in words, for agents that are given a description rather than (or beside)
    the image: a vision model's grounded description, or OCR and file metadata on text-only backends.
    Filled once per sample by the strategies that use it (see :mod:`m3d_agents.tools.image_in_words`)."""
    video: "VideoInfo | None" = None
    """The probed video file, when the sample has one (probed once, here)."""


_cache: dict[tuple[str, int], PreparedImage] = {}
"""Prepared images by content and size, oldest first; bounded by ``InputLimits.image_cache_mb``."""

def load_image(path: Path, limits: InputLimits | None = None, field: str = "image") -> PreparedImage:
    """Validate and normalise one image; repeated content is served from an in-process cache."""
    limits = limits or InputLimits()
    path = Path(path)
    checked_size(path, limits.max_image_bytes, field)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(field, f"cannot read {path}: {exc.strerror or exc}") from exc
    sha = hashlib.sha256(data).hexdigest()
    key = (sha, limits.max_side)
    cached = _cache.pop(key, None)
    if cached is not None:
        _cache[key] = cached
        return cached
    prepared = _decoded_apart(str(path.resolve()), path, sha, limits, field)
    budget = int(limits.image_cache_mb * 1_000_000)
    if held_bytes(prepared) <= budget:
        _cache[key] = prepared
    evict_past(budget)
    return prepared


def decode_image(data: bytes, source: str, limits: InputLimits | None = None, field: str = "image") -> PreparedImage:
    """Validate and normalise an image held in memory (one downloaded from the web), as :func:`load_image`
    does a file; ``source`` names it in errors."""
    return _decoded_apart(data, Path(source), hashlib.sha256(data).hexdigest(), limits or InputLimits(), field)


def _decoded_apart(data: bytes | str, path: Path, sha: str, limits: InputLimits, field: str) -> PreparedImage:
    """:func:`decode_rgb` in a worker of the parser pool: ``data`` is the file's bytes, or its absolute path
    (read there, so a large file is not copied between processes)."""
    item = Item("image", str(path), "the image decoder", field)
    size, pixels, original, fmt = parse(item, decode_rgb, data, str(path), limits, field)
    rgb = Image.frombytes("RGB", size, pixels)
    return PreparedImage(source=path, sha256=sha, image=rgb, original_size=original, format=fmt,
                         max_decoded_pixels=limits.max_decoded_pixels)


def decode_rgb(data: bytes | str, source: str, limits: InputLimits, field: str) -> tuple[tuple[int, int], bytes, tuple[int, int], str]:
    """The image as RGB scaled to ``max_side``: (size, raw pixels, original size, format); runs in a parser worker."""
    if isinstance(data, str):
        try:
            data = Path(data).read_bytes()
        except OSError as exc:
            raise InputError(field, f"cannot read {source}: {exc.strerror or exc}") from exc
    prepared = _decode(data, Path(source), "", limits, field)
    return prepared.image.size, prepared.image.tobytes(), prepared.original_size, prepared.format


def held_bytes(prepared: PreparedImage) -> int:
    """What keeping ``prepared`` costs: its pixels, and the encoding that messages send of it once one was made."""
    from m3d_agents.media.message_images import kept_encoding_bytes

    width, height = prepared.image.size
    return width * height * len(prepared.image.getbands()) + kept_encoding_bytes(prepared.image)


def cached_bytes() -> int:
    """What the cache of prepared images holds now, in bytes."""
    return sum(held_bytes(p) for p in _cache.values())


def evict_past(budget: int) -> None:
    """Drop the least recently used prepared images until the cache holds at most ``budget`` bytes.

    An entry grows after it is cached (a message encodes its picture once, on first send), so the bound is
    checked again on every insertion, against what each entry holds then."""
    sizes = {key: held_bytes(p) for key, p in _cache.items()}
    total = sum(sizes.values())
    for key in list(_cache):
        if total <= budget:
            break
        total -= sizes[key]
        del _cache[key]


def _decode(data: bytes, path: Path, sha: str, limits: InputLimits, field: str) -> PreparedImage:
    ImageFile.LOAD_TRUNCATED_IMAGES = False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            probe = Image.open(io.BytesIO(data))
            fmt = probe.format or "unknown"
            width, height = probe.size
    except UnidentifiedImageError as exc:
        raise InputError(field, f"{path} is not an image file PIL can identify") from exc
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise InputError(field, f"{path} looks like a decompression bomb: {exc}") from exc
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        # A file cut inside its header (the first 600 bytes of a JPEG) fails while PIL reads the size.
        raise InputError(field, f"{path} is corrupt or truncated: {exc}") from exc
    if fmt not in SUPPORTED_FORMATS:
        raise InputError(field, f"{path} has unsupported format {fmt}; supported: {', '.join(sorted(SUPPORTED_FORMATS))}")
    if width * height > limits.max_pixels:
        raise InputError(
            field, f"{path} has {width}x{height} = {width * height} pixels, over the limit of {limits.max_pixels}"
        )
    image = Image.open(io.BytesIO(data))
    if width * height > limits.max_decoded_pixels:
        if fmt != "JPEG":
            raise InputError(
                field, f"{path} has {width}x{height} = {width * height} pixels; decoding a {fmt} image that large is "
                f"refused (over max_decoded_pixels, {limits.max_decoded_pixels}); scale it down first",
            )
        # JPEG decodes at 1/2, 1/4 or 1/8 scale directly: the least reduction within the budget, or more
        # while the result still covers max_side (it is scaled down to that anyway).
        scale = next((r for r in (2, 4, 8) if width * height <= limits.max_decoded_pixels * r * r), 8)
        while scale < 8 and max(width, height) // (scale * 2) >= limits.max_side:
            scale *= 2
        image.draft("RGB", (-(-width // scale), -(-height // scale)))
    try:
        image.load()
        rgb = image.convert("RGB")
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        raise InputError(field, f"{path} is corrupt or truncated: {exc}") from exc
    if rgb.size[0] * rgb.size[1] > limits.max_decoded_pixels:
        raise InputError(field, f"{path} still has {rgb.size[0]}x{rgb.size[1]} pixels at the least scale its format "
                         f"decodes to, over max_decoded_pixels ({limits.max_decoded_pixels})")
    if max(rgb.size) > limits.max_side:
        rgb.thumbnail((limits.max_side, limits.max_side), Image.Resampling.LANCZOS)
    return PreparedImage(source=path, sha256=sha, image=rgb, original_size=(width, height), format=fmt,
                         max_decoded_pixels=limits.max_decoded_pixels)


def prepare_sample(sample: Sample, limits: InputLimits | None = None) -> PreparedSample:
    """Step 1 of every check: apply the configurable limits and load every image."""
    limits = limits or InputLimits()
    if len(sample.text) > limits.max_text_chars:
        raise InputError("text", f"{len(sample.text)} characters, over the limit of {limits.max_text_chars}")
    if len(sample.images) > limits.max_images:
        raise InputError("images", f"{len(sample.images)} images, over the limit of {limits.max_images}")
    images = [load_image(p, limits, field=f"images[{i}]") for i, p in enumerate(sample.images)]
    video = None
    if sample.video is not None and sample.video.path is not None:
        from m3d_agents.media.video import probe

        video = probe(sample.video.path, limits)
    return PreparedSample(sample=sample, images=images, video=video)
