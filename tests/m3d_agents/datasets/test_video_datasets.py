"""Video data sets: FakeSV's public schema, FakeTT, FakeVV (Fact-R1's test JSON), split files and temporal splits."""

from __future__ import annotations

from pathlib import Path

import pytest

from m3d_agents.datasets import load_dataset
from m3d_agents.errors import InputError
from tests.support.paths import REPO

FIXTURES = REPO / "tests" / "fixtures" / "datasets"


def test_fakesv_public_schema_skips_debunking_videos_and_reads_keywords() -> None:
    loaded = load_dataset(f"fakesv:{FIXTURES / 'fakesv/data_public.json'}")
    assert [(s.id, s.gold_label, s.text) for s in loaded.samples] == [
        ("video-3x2bsdq5dh8cp3g", "fake", "四川 地震 房屋倒塌"),
        ("video-3x5jsbyt7mh7vvq", "real", "暴雨 城市内涝"),
        ("video-3xq7gqv2u4b6m2e", "fake", "台风 海浪"),
    ]
    assert loaded.report.skipped == {"label '辟谣' has no mapping onto the chosen taxonomy": 2}


def test_fakesv_split_file_keeps_the_listed_ids() -> None:
    loaded = load_dataset(f"fakesv:{FIXTURES / 'fakesv/data_public.json'}",
                          {"split_file": str(FIXTURES / "fakesv/vid_time3_test.txt")})
    assert [s.id for s in loaded.samples] == ["video-3x2bsdq5dh8cp3g", "video-3xq7gqv2u4b6m2e"]
    assert loaded.report.skipped["not in the split file"] == 2


def test_fakesv_title_wins_over_keywords_and_the_old_debunk_label_still_skips() -> None:
    loaded = load_dataset(f"fakesv:{FIXTURES / 'fakesv/data.json'}")
    assert loaded.samples[0].text.startswith("网传某地出现巨型冰雹")


def test_fakett_reads_its_schema_with_dates() -> None:
    loaded = load_dataset(f"fakett:{FIXTURES / 'fakett/data.json'}")
    assert [s.gold_label for s in loaded.samples] == ["fake", "real", "real", "fake", "real"]
    assert str(loaded.samples[0].metadata.claim_date) == "2022-09-01" and "hurricane shark" not in loaded.samples[0].text


def test_a_temporal_split_takes_the_newest_share() -> None:
    test = load_dataset(f"fakett:{FIXTURES / 'fakett/data.json'}", {"split": "temporal", "test_fraction": "0.25"})
    train = load_dataset(f"fakett:{FIXTURES / 'fakett/data.json'}", {"split": "temporal_train", "test_fraction": "0.25"})
    assert [s.id for s in test.samples] == ["fakett-7004"]
    assert [s.id for s in train.samples] == ["fakett-7001", "fakett-7002", "fakett-7003"]
    assert test.report.skipped == {"no publication time (temporal split)": 1}
    with pytest.raises(InputError, match="split: .*publication times"):
        load_dataset(f"fakesv:{FIXTURES / 'fakesv/data_public.json'}", {"split": "temporal"})


def test_fakevv_reads_title_audio_answer_and_frames() -> None:
    loaded = load_dataset(f"fakevv:{FIXTURES / 'fakevv/fakevv_test.json'}", {"missing_images": "skip"})
    first, second = loaded.samples
    assert (first.text, first.gold_label) == ("Minister says the budget is final.", "fake")
    assert first.video is not None and first.video.transcript == "we will not do this again"
    assert [p.name for p in first.video.frames] == [f"{i}.png" for i in range(8)] and all(p.is_file() for p in first.video.frames)
    assert (second.text, second.gold_label, second.video.transcript) == ("Chancellor's budget plans, explained.", "real", None)  # type: ignore[union-attr]
    assert loaded.report.skipped == {"image file not found (images[0])": 1}


def test_fakevv_missing_frames_are_an_error_naming_the_row_or_optional() -> None:
    with pytest.raises(InputError, match=r"fakevv_test.json\[2\].images\[0\]"):
        load_dataset(f"fakevv:{FIXTURES / 'fakevv/fakevv_test.json'}")
    loaded = load_dataset(f"fakevv:{FIXTURES / 'fakevv/fakevv_test.json'}", {"frames": "optional"})
    assert len(loaded.samples) == 3 and loaded.samples[2].video.frames == []  # type: ignore[union-attr]


def test_fakevv_frames_are_shown_to_the_verifier(tmp_path: Path) -> None:
    from debates.strategies.factguard.frames import shown_frames
    from m3d_agents.media.images import prepare_sample

    loaded = load_dataset(f"fakevv:{FIXTURES / 'fakevv/fakevv_test.json'}", {"missing_images": "skip"})
    frames = shown_frames(prepare_sample(loaded.samples[0]), 8)
    assert [f.label for f in frames][:2] == ["frame 1 of 8", "frame 2 of 8"] and len(frames) == 8
