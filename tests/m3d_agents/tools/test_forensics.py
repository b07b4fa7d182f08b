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
