"""The data contract: samples, images, taxonomies and verdicts, and the errors that name the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from PIL import Image
from pydantic import ValidationError

from m3d_agents.errors import InputError
from m3d_agents.media.images import load_image, prepare_sample
from m3d_agents.labels import TAXONOMIES, get_taxonomy
from m3d_agents.sample import InputLimits, Sample
from m3d_agents.verdict import Verdict
from tests.support.paths import EXAMPLE_IMAGE


def test_every_taxonomy_maps_each_label_to_misinformation() -> None:
    assert set(TAXONOMIES) == {"m3d", "ooc", "factcheck", "factcheck3", "amg", "binary"}
    assert get_taxonomy("binary").is_misinformation("fake") is True
    assert get_taxonomy("binary").is_misinformation("REAL") is False
    assert get_taxonomy("m3d").is_misinformation("original") is False
    assert get_taxonomy("m3d").is_misinformation("cross-modal consistency distortion") is True
    assert get_taxonomy("ooc").is_misinformation("falsified") is True
    assert len(get_taxonomy("amg").labels) == 6
    assert {"true", "false", "unproven", "mixture", "outdated"} == set(get_taxonomy("factcheck").labels)
    for taxonomy in TAXONOMIES.values():
        assert any(taxonomy.misinformation.values()) and not all(taxonomy.misinformation.values())


def test_unknown_label_is_named() -> None:
    with pytest.raises(ValueError, match="'satirical'"):
        get_taxonomy("binary").normalise("satirical")


def test_empty_text_names_the_field() -> None:
    with pytest.raises(ValidationError) as info:
        Sample(text="   ")
    assert info.value.errors()[0]["loc"] == ("text",)


def test_malformed_date_names_the_field() -> None:
    with pytest.raises(ValidationError) as info:
        Sample(text="a claim", metadata={"claim_date": "31/02/2020"})
    assert info.value.errors()[0]["loc"] == ("metadata", "claim_date")


def test_text_over_the_limit() -> None:
    with pytest.raises(InputError) as info:
        prepare_sample(Sample(text="x" * 50), InputLimits(max_text_chars=10))
    assert info.value.field == "text"


def test_sample_id_is_stable_and_gold_label_normalised() -> None:
    a = Sample(text="claim", gold_label="FAKE")
    b = Sample(text="claim")
    assert a.id == b.id and len(a.id) == 16
    assert a.gold_label == "fake"
    with pytest.raises(ValidationError):
        Sample(text="claim", gold_label="maybe")


def test_real_image_is_normalised_and_cached() -> None:
    limits = InputLimits(max_side=256)
    first = load_image(EXAMPLE_IMAGE, limits)
    assert first.image.mode == "RGB"
    assert max(first.image.size) == 256
    assert first.original_size[0] > 256
    assert load_image(EXAMPLE_IMAGE, limits) is first


def _bad_images(tmp: Path) -> dict[str, Path]:
    good = EXAMPLE_IMAGE.read_bytes()
    paths = {
        "truncated": tmp / "truncated.jpg",
        "not an image": tmp / "notes.jpg",
        "empty": tmp / "empty.png",
        "corrupt": tmp / "corrupt.jpg",
    }
    paths["truncated"].write_bytes(good[: len(good) // 2])
    paths["not an image"].write_text("this is a text file, not a picture")
    paths["empty"].write_bytes(b"")
    corrupt = bytearray(good)
    corrupt[600:4000] = b"\x00" * 3400
    paths["corrupt"].write_bytes(bytes(corrupt[:1200]) + b"\xff\xd9")
    return paths


@pytest.mark.parametrize("kind", ["truncated", "not an image", "empty", "corrupt"])
def test_broken_image_files_give_clear_errors(tmp_path: Path, kind: str) -> None:
    path = _bad_images(tmp_path)[kind]
    with pytest.raises(InputError) as info:
        prepare_sample(Sample(text="claim", images=[EXAMPLE_IMAGE, path]))
    assert info.value.field == "images[1]"
    assert str(path) in info.value.problem


def test_missing_image(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"images\[0\]: file .* does not exist"):
        prepare_sample(Sample(text="claim", images=[tmp_path / "nope.jpg"]))


def test_unsupported_format(tmp_path: Path) -> None:
    path = tmp_path / "picture.ico"
    Image.new("RGB", (16, 16)).save(path, format="ICO")
    with pytest.raises(InputError, match="unsupported format ICO"):
        load_image(path)


def test_pixel_limit_guards_against_bombs(tmp_path: Path) -> None:
    path = tmp_path / "wide.png"
    Image.new("L", (4000, 3000)).save(path)
    with pytest.raises(InputError, match="over the limit"):
        load_image(path, InputLimits(max_pixels=1_000_000))


def test_byte_limit(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="bytes, over the limit"):
        load_image(EXAMPLE_IMAGE, InputLimits(max_image_bytes=1000))


def test_verdict_consistency() -> None:
    verdict = Verdict(sample_id="s", taxonomy="ooc", label="Falsified", confidence=0.9)
    assert verdict.label == "falsified" and verdict.is_misinformation is True
    abstention = Verdict.abstain("s", reason="parse failed")
    assert abstention.abstained and abstention.label is None and abstention.is_misinformation is None
    with pytest.raises(ValidationError):
        Verdict(sample_id="s")
    with pytest.raises(ValidationError):
        Verdict(sample_id="s", label="fake", confidence=1.5)
    with pytest.raises(ValidationError):
        Verdict(sample_id="s", abstained=True)
