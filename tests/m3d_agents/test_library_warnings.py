"""Pillow's warnings (and any other library's) become the product's own one-line notes, once per message."""

from __future__ import annotations

import io
import logging
import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Callable, Iterator

import pytest
from PIL import Image

from m3d_agents import library_warnings
from tests.support.fault_server import FaultServer
from tests.support.paths import REPO


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    library_warnings.reset_seen()
    yield
    library_warnings.reset_seen()


def palette_with_byte_transparency(path: Path) -> Path:
    image = Image.new("P", (64, 64))
    image.putpalette([i % 256 for i in range(768)])
    image.save(path, transparency=b"\x00" * 10)
    return path


def jpeg_with_damaged_exif(path: Path) -> Path:
    buffer = io.BytesIO()
    Image.new("RGB", (64, 64), "red").save(buffer, "JPEG")
    data = buffer.getvalue()
    exif = b"Exif\x00\x00" + b"II*\x00\x08\x00\x00\x00" + b"\xff\xff" + b"\x00" * 20
    path.write_bytes(data[:2] + b"\xff\xe1" + (len(exif) + 2).to_bytes(2, "big") + exif + data[2:])
    return path


@pytest.mark.parametrize("make, name, words", [
    (palette_with_byte_transparency, "post.png",
     "an image is a palette image whose transparency is given as bytes; it is read as RGBA"),
    (jpeg_with_damaged_exif, "post.jpg", "an image's EXIF block is damaged (Expecting to read 12 bytes but only got 8)"),
], ids=["palette-transparency", "damaged-exif"])
def test_a_check_prints_pillows_warning_as_one_note_of_its_own(tmp_path: Path, make: Callable[[Path], Path], name: str,
                                                               words: str) -> None:
    image = make(tmp_path / name)
    with FaultServer(rate=0.0) as server:
        env = {**os.environ, "PYTHONPATH": str(REPO), "M3D_LOCAL_BASE_URL": server.base_url, "M3D_CACHE_DIR": str(tmp_path / "c")}
        done = subprocess.run([sys.executable, "-m", "debates", "check", "--text", "a storm", "--image", str(image)],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    notes = [line for line in done.stderr.splitlines() if "m3d.images" in line]
    assert len(notes) == 1 and notes[0].startswith(f"WARNING m3d.images: {words}"), done.stderr
    assert "warnings.warn" not in done.stderr and "/PIL/" not in done.stderr and "UserWarning" not in done.stderr


def test_one_note_per_distinct_message_and_other_libraries_in_one_line(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING), warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = library_warnings.show_warning
        for _ in range(5):
            warnings.warn_explicit("Corrupt EXIF data.  Expecting to read 4 bytes but only got 2. ", UserWarning,
                                   "/x/site-packages/PIL/TiffImagePlugin.py", 982, module="PIL.TiffImagePlugin",
                                   registry={})
        warnings.warn_explicit("something\nspanning lines", FutureWarning, "/x/site-packages/somelib/core.py", 7,
                               module="somelib.core", registry={})
    lines = [r.getMessage() for r in caplog.records]
    assert lines.count("an image's EXIF block is damaged (Expecting to read 4 bytes but only got 2); its metadata is read "
                       "as far as it goes") == 1
    assert "FutureWarning from somelib: something spanning lines" in lines
    assert all("\n" not in line for line in lines)
