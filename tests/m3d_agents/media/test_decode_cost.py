"""What decoding an image may cost is bounded: per image, and across samples decoded at once."""

from __future__ import annotations

import io
import threading
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


def test_decodes_in_flight_share_one_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(images, "DECODE_BUDGET_PIXELS", 100)
    held: list[int] = []
    peak: list[int] = []
    lock = threading.Lock()

    def decode(pixels: int) -> None:
        with images.decode_budget(pixels):
            with lock:
                held.append(pixels)
                peak.append(sum(held))
            time.sleep(0.01)
            with lock:
                held.remove(pixels)

    workers = [threading.Thread(target=decode, args=(60,)) for _ in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(10)
    assert max(peak) <= 100 and len(peak) == 6


def test_the_cache_of_prepared_images_is_bounded_by_pixels(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(images, "_CACHE_PIXELS", 3 * 100 * 100)
    monkeypatch.setattr(images, "_cache", {})
    for shade in range(8):
        buffer = io.BytesIO()
        Image.new("RGB", (100, 100), (shade, 0, 0)).save(buffer, format="PNG")
        (tmp_path / f"{shade}.png").write_bytes(buffer.getvalue())
        load_image(tmp_path / f"{shade}.png")
    assert len(images._cache) <= 3
