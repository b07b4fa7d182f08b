"""What decoding an image may cost is bounded: per image, and across samples decoded at once."""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from PIL import Image

from m3d_agents.errors import InputError
from m3d_agents.media import images
from m3d_agents.media.images import load_image
from m3d_agents.sample import InputLimits


def test_a_small_png_of_many_megapixels_is_refused_before_decoding(tmp_path: Path) -> None:
    """The audit's case: a few hundred kilobytes that decode to gigabytes."""
    path = tmp_path / "flat.png"
    Image.new("L", (6000, 5000)).save(path, optimize=True)
    assert path.stat().st_size < 1_000_000
    started = time.process_time()
    with pytest.raises(InputError, match="max_decoded_pixels") as caught:
        load_image(path, field="images[0]")
    assert caught.value.field == "images[0]"
    assert time.process_time() - started < 5, "refused from its header, not after decoding"


def test_a_large_jpeg_is_decoded_at_a_reduced_scale(tmp_path: Path) -> None:
    path = tmp_path / "photo.jpg"
    Image.new("RGB", (6000, 4000), (120, 80, 40)).save(path, quality=70)
    prepared = load_image(path, InputLimits(max_decoded_pixels=4_000_000, max_side=1024))
    assert prepared.original_size == (6000, 4000)
    assert max(prepared.image.size) == 1024


def test_images_are_decoded_in_the_parser_pool_not_in_the_caller(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Decodes of concurrent samples are bounded by the pool: a worker decodes one image at a time, within its limits."""
    path = tmp_path / "red.png"
    Image.new("RGB", (40, 30), (200, 0, 0)).save(path)

    def refuse(*_args: object, **_kwargs: object) -> None:
        raise AssertionError("the calling process decoded an image from outside")

    monkeypatch.setattr(Image, "open", refuse)
    prepared = load_image(path)
    assert prepared.image.size == (40, 30) and prepared.image.getpixel((0, 0)) == (200, 0, 0)


def test_the_cache_of_prepared_images_is_bounded_by_pixels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(images, "_CACHE_PIXELS", 3 * 100 * 100)
    monkeypatch.setattr(images, "_cache", {})
    for shade in range(8):
        buffer = io.BytesIO()
        Image.new("RGB", (100, 100), (shade, 0, 0)).save(buffer, format="PNG")
        (tmp_path / f"{shade}.png").write_bytes(buffer.getvalue())
        load_image(tmp_path / f"{shade}.png")
    assert len(images._cache) <= 3
