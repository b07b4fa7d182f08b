"""Forensic tools on real tampered images (CASIA v2 with masks), metadata, bad files and the learned slot."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from m3d_agents.errors import InputError
from m3d_agents.media.images import load_image
from m3d_agents.tools.forensics.exif import analyse_exif
from m3d_agents.tools.forensics.jpeg import analyse_jpeg, estimate_quality, quantisation_tables
from m3d_agents.tools.forensics.fusion import fuse, run_forensics
from m3d_agents.tools.forensics.learned import MODEL_ENV, analyse_learned
from tests.support.paths import EXAMPLE_IMAGE, shared_data

SPLICE = "Tp_D_CRD_S_N_ani00028_ani00058_00148"


def tampered_and_mask(stem: str) -> tuple[Path, np.ndarray]:
    folder = shared_data("casia2-samples")
    image = next(p for p in folder.glob(stem + ".*") if not p.name.endswith("_gt.png"))
    mask = np.asarray(Image.open(folder / f"{stem}_gt.png").convert("L")) > 127
    return image, mask


@pytest.mark.parametrize("tool", ["ela", "jpeg", "noise", "fusion"])
def test_heat_map_is_brighter_on_the_tampered_region(tool: str) -> None:
    path, mask = tampered_and_mask(SPLICE)
    results = run_forensics(load_image(path), maps=True)
    result = fuse(list(results.values())) if tool == "fusion" else results[tool]
    assert result.heatmap is not None and result.heatmap.shape == mask.shape
    tampered, untouched = result.heatmap[mask].mean(), result.heatmap[~mask].mean()
    assert tampered > 1.5 * untouched, (tampered, untouched)
    assert 0.0 <= result.score <= 1.0 and result.finding
    png = Image.open(io.BytesIO(result.heatmap_png))
    assert png.format == "PNG" and png.size == (mask.shape[1], mask.shape[0])


def test_jpeg_tables_and_quality() -> None:
    tables = quantisation_tables(EXAMPLE_IMAGE.read_bytes())
    assert len(tables) == 2 and len(tables[0]) == 64
    assert estimate_quality(tables[0]) == (90, 0.0)
    result = analyse_jpeg(load_image(EXAMPLE_IMAGE).ref())
    assert result.details["jpeg"] is True and result.details["estimated_quality"] == 90
    assert "dct_periodicity" in result.details
    tiff, _ = tampered_and_mask(SPLICE)
    assert analyse_jpeg(load_image(tiff).ref()).details["jpeg"] is False


def test_double_compression_raises_the_dct_periodicity(tmp_path: Path) -> None:
    rgb = np.asarray(Image.open(EXAMPLE_IMAGE).convert("RGB"))
    once, twice = tmp_path / "once.jpg", tmp_path / "twice.jpg"
    Image.fromarray(rgb).save(once, quality=90)
    buffer = io.BytesIO()
    Image.fromarray(rgb).save(buffer, format="JPEG", quality=55)
    Image.open(buffer).save(twice, quality=90)
    single = analyse_jpeg(load_image(once).ref()).details["dct_periodicity"]
    double = analyse_jpeg(load_image(twice).ref()).details["dct_periodicity"]
    assert double > single + 0.05, (single, double)


def test_exif_of_an_edited_file_names_the_editor() -> None:
    path, _ = tampered_and_mask(SPLICE)
    result = analyse_exif(load_image(path).ref())
    assert result.informative and result.score >= 0.8
    assert "photoshop" in result.finding.lower() and result.details["xmp"] is True


def test_exif_of_a_file_without_metadata_is_uninformative() -> None:
    result = analyse_exif(load_image(EXAMPLE_IMAGE).ref())
    assert not result.informative
    assert "no EXIF" in result.finding


def test_exif_camera_dates_and_gps(tmp_path: Path) -> None:
    exif = Image.Exif()
    exif[271], exif[272], exif[306] = "Canon", "EOS 5D", "2020:05:02 10:00:00"
    exif.get_ifd(0x8769)[36867] = "2020:05:01 09:00:00"
    exif.get_ifd(0x8825)[1] = "N"
    path = tmp_path / "camera.jpg"
    Image.open(EXAMPLE_IMAGE).save(path, exif=exif)
    result = analyse_exif(load_image(path).ref())
    assert result.informative
    assert "Canon EOS 5D" in result.finding and "GPS data present" in result.finding
    assert "modified later" in result.finding and result.score == pytest.approx(0.65)


def test_fusion_leaves_out_uninformative_tools() -> None:
    results = run_forensics(load_image(EXAMPLE_IMAGE))
    fused = fuse(list(results.values()))
    informative = [r.score for r in results.values() if r.informative]
    assert not results["exif"].informative
    assert fused.score == pytest.approx(sum(informative) / len(informative), abs=1e-3)
    with pytest.raises(InputError, match="unknown forensic tool"):
        run_forensics(load_image(EXAMPLE_IMAGE), ["ela", "magic"])


def test_corrupt_file_gives_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "photo.jpg"
    path.write_bytes(b"this is not a picture at all" * 20)
    with pytest.raises(InputError, match="not an image file"):
        load_image(path)


def test_truncated_jpeg_gives_a_clear_error(tmp_path: Path) -> None:
    data = EXAMPLE_IMAGE.read_bytes()
    path = tmp_path / "cut.jpg"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError, match="corrupt or truncated"):
        load_image(path)


def test_file_replaced_after_loading_gives_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "later.jpg"
    Image.open(EXAMPLE_IMAGE).save(path, quality=91)
    image = load_image(path)
    path.write_bytes(b"gone")
    with pytest.raises(InputError, match="can no longer be read"):
        run_forensics(image, ["ela"])


def test_learned_detector_slot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    image = load_image(EXAMPLE_IMAGE)
    monkeypatch.delenv(MODEL_ENV, raising=False)
    assert analyse_learned(image).finding.startswith("unavailable: no learned detector")

    class RedIsFake(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (x[:, :1] - x[:, 1:2]) * 20.0

    path = tmp_path / "detector.pt"
    torch.jit.script(RedIsFake()).save(str(path))
    monkeypatch.setenv(MODEL_ENV, str(path))
    result = analyse_learned(image)
    assert result.informative and 0.0 <= result.score <= 1.0
    assert result.heatmap is not None and result.heatmap.shape == (306, 306)
    rgb = np.asarray(image.image, dtype=np.float64) / 255.0
    expected = 1 / (1 + np.exp(-(rgb[..., 0] - rgb[..., 1]) * 20.0))
    assert result.score == pytest.approx(float(expected.max()), abs=1e-3)

    bogus = tmp_path / "bogus.pt"
    bogus.write_bytes(b"not a model")
    with pytest.raises(InputError, match="not a TorchScript model"):
        analyse_learned(image, bogus)
    with pytest.raises(InputError, match="does not exist"):
        analyse_learned(image, tmp_path / "missing.pt")


def test_heat_maps_of_a_large_image_are_kept_at_the_drawn_size(tmp_path: Path) -> None:
    """A full-resolution float map of a large photo held about 100 MB per tool; what is kept is what is drawn."""
    from m3d_agents.tools.forensics.base import HEATMAP_MAX_SIDE

    rng = np.random.default_rng(3)
    rgb = rng.integers(0, 255, (1500, 2100, 3), dtype=np.uint8)
    rgb[400:700, 900:1300] = rng.integers(100, 110, (300, 400, 3), dtype=np.uint8)
    path = tmp_path / "large.jpg"
    Image.fromarray(rgb).save(path, quality=90)
    results = run_forensics(load_image(path), maps=True)
    maps = [r.heatmap for r in [*results.values(), fuse(list(results.values()))] if r.heatmap is not None]
    assert [(m.shape, m.dtype) for m in maps] == [((731, HEATMAP_MAX_SIDE), np.dtype(np.float32))] * len(maps) and len(maps) >= 3
    ela = results["ela"].heatmap  # the smooth patch (low error levels) sits where it is in the image, at the map's scale
    assert ela is not None and ela[200:340, 440:630].mean() < 0.5 * np.delete(ela, np.s_[190:350], axis=0).mean()


def test_the_decoded_originals_are_bounded_in_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from m3d_agents.tools.forensics import base

    monkeypatch.setattr(base, "_pixels", base.OrderedDict())
    monkeypatch.setattr(base, "PIXEL_CACHE_BYTES", 130_000)  # two 120x120 noisy photos (43 kB of pixels, about 15 kB of file)
    rng = np.random.default_rng(5)
    for k in range(5):
        path = tmp_path / f"{k}.jpg"
        Image.fromarray(rng.integers(0, 255, (120, 120, 3), dtype=np.uint8)).save(path, quality=80)
        base.analysis_image(load_image(path).ref())
        assert sum(e.rgb.nbytes + len(e.data) for e in base._pixels.values()) <= 130_000
    assert len(base._pixels) == 2
    monkeypatch.setattr(base, "PIXEL_CACHE_BYTES", 10)
    base.analysis_image(load_image(tmp_path / "0.jpg").ref())
    assert len(base._pixels) == 1, "the image in use is kept, however large, and nothing else"
