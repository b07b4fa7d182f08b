"""What decoding an image may cost is bounded: per image, and across samples decoded at once."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from PIL import Image

from m3d_agents.errors import InputError
from m3d_agents.media import images
from m3d_agents.media.images import load_image
from m3d_agents.media.message_images import message_image
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


def _picture(path: Path, shade: int, side: int = 100) -> Path:
    noisy = Image.merge("RGB", [Image.effect_noise((side, side), 50 + shade + band) for band in range(3)])
    noisy.save(path, format="PNG")
    return path


def test_the_cache_of_prepared_images_evicts_past_its_byte_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(images, "_cache", {})
    limits = InputLimits(image_cache_mb=0.1)  # 100 kB: three 100x100 RGB pictures (30 kB each), not four
    for shade in range(8):
        load_image(_picture(tmp_path / f"{shade}.png", shade), limits)
        assert images.cached_bytes() <= 100_000
    assert len(images._cache) == 3
    assert [p.source.name for p in images._cache.values()] == ["5.png", "6.png", "7.png"], "the oldest go first"


def test_the_cache_counts_the_encoding_messages_keep(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(images, "_cache", {})
    limits = InputLimits(image_cache_mb=0.1)
    first = load_image(_picture(tmp_path / "a.png", 1), limits)
    message_image(first.image).to_base64()  # sent once: a noisy picture's PNG, in base64, outweighs its pixels
    assert images.held_bytes(first) > 2 * 30_000
    load_image(_picture(tmp_path / "b.png", 2), limits)
    assert images.cached_bytes() <= 100_000 and [p.source.name for p in images._cache.values()] == ["b.png"]


def test_a_recently_used_image_stays_and_none_is_kept_at_zero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(images, "_cache", {})
    limits = InputLimits(image_cache_mb=0.07)  # two pictures
    paths = [_picture(tmp_path / f"{k}.png", k) for k in range(3)]
    load_image(paths[0], limits)
    load_image(paths[1], limits)
    load_image(paths[0], limits)  # used again: the newest now
    load_image(paths[2], limits)
    assert [p.source.name for p in images._cache.values()] == ["0.png", "2.png"]
    load_image(paths[1], InputLimits(image_cache_mb=0))
    assert images._cache == {}
