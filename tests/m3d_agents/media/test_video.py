"""The video module on generated clips: probing, frame sampling by time, the grid, and every bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from m3d_agents.errors import InputError
from m3d_agents.media.images import prepare_sample
from m3d_agents.media.video import grid, overview_frames, parse_seconds, probe, sample_frames, window_times
from m3d_agents.sample import InputLimits, Sample, VideoRef
from tests.support.videos import colour_of_second, make_clip


@pytest.fixture
def clip(tmp_path: Path) -> Path:
    return make_clip(tmp_path / "clip.mp4", seconds=6)


def mean_colour(image) -> tuple[int, int, int]:  # type: ignore[no-untyped-def]
    return tuple(int(v) for v in np.asarray(image).reshape(-1, 3).mean(axis=0))  # type: ignore[return-value]


def close(a: tuple[int, ...], b: tuple[int, ...], tolerance: int = 20) -> bool:
    return all(abs(x - y) <= tolerance for x, y in zip(a, b))


def test_a_six_second_clip_probes_to_six_seconds(clip: Path) -> None:
    info = probe(clip)
    assert info.duration_s == pytest.approx(6.0, abs=0.1)
    assert (info.width, info.height) == (64, 48) and info.fps == pytest.approx(10)
    assert not info.has_audio


def test_frames_of_a_window_come_from_its_seconds_in_order(clip: Path) -> None:
    frames = sample_frames(clip, 2.0, 4.0, 4)
    times = [f.time_s for f in frames]
    assert all(2.0 <= t <= 4.0 for t in times) and times == sorted(times)
    assert times == pytest.approx(window_times(2.0, 4.0, 4), abs=0.06)
    colours = [mean_colour(f.image) for f in frames]
    assert close(colours[0], colour_of_second(2)) and close(colours[1], colour_of_second(2))
    assert close(colours[2], colour_of_second(3)) and close(colours[3], colour_of_second(3))


def test_overview_frames_span_the_whole_video(clip: Path) -> None:
    frames = overview_frames(clip, 6)
    assert [int(f.time_s) for f in frames] == [0, 1, 2, 3, 4, 5]
    assert [close(mean_colour(f.image), colour_of_second(s)) for s, f in enumerate(frames)] == [True] * 6


def test_the_grid_is_two_by_two_row_major_within_its_longest_side(clip: Path) -> None:
    frames = sample_frames(clip, 0.0, 6.0, 4)
    picture = grid([f.image for f in frames], max_side=100)
    assert max(picture.size) <= 100
    w, h = picture.size[0] // 2, picture.size[1] // 2
    cells = [picture.crop((c * w, r * h, (c + 1) * w, (r + 1) * h)) for r in range(2) for c in range(2)]
    for cell, frame in zip(cells, frames):
        assert close(mean_colour(cell), mean_colour(frame.image))


def test_a_clip_with_sound_decodes(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "sound.mp4", seconds=3, audio=True)
    assert probe(clip).has_audio
    assert len(sample_frames(clip, 0.5, 2.5, 4)) == 4


def test_windows_are_clamped_and_tiny_ones_widened(clip: Path) -> None:
    frames = sample_frames(clip, -3.0, 99.0, 4)
    assert all(0.0 <= f.time_s <= 6.0 for f in frames)
    narrow = sample_frames(clip, 3.0, 3.01, 4)
    assert len({f.time_s for f in narrow}) > 1, "widened to a second around the centre"


@pytest.mark.parametrize(
    "make, field, words",
    [
        (lambda d: (d / "empty.mp4").write_bytes(b"") and None or d / "empty.mp4", "video.path", "empty"),
        (lambda d: (d / "text.mp4").write_text("not a video at all\n" * 20) and None or d / "text.mp4", "video.path", "not a video"),
        (lambda d: d / "missing.mp4", "video.path", "does not exist"),
    ],
)
def test_bad_files_name_the_video_path(tmp_path: Path, make, field: str, words: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(InputError) as error:
        probe(make(tmp_path))
    assert error.value.field == field and words in error.value.problem


def test_limits_on_length_size_and_resolution(clip: Path) -> None:
    with pytest.raises(InputError, match="video.path: .*over the limit of 5 s"):
        probe(clip, InputLimits(max_video_seconds=5))
    with pytest.raises(InputError, match="bytes, over the limit"):
        probe(clip, InputLimits(max_video_bytes=10))
    with pytest.raises(InputError, match="pixels a frame"):
        probe(clip, InputLimits(max_video_pixels=100))


def test_reversed_and_out_of_range_windows_name_the_argument(clip: Path) -> None:
    with pytest.raises(InputError) as reversed_window:
        sample_frames(clip, 4.0, 2.0, 4)
    assert reversed_window.value.field == "end_s"
    with pytest.raises(InputError) as past_end:
        sample_frames(clip, 7.0, 9.0, 4)
    assert past_end.value.field == "start_s" and "6.0 s" in past_end.value.problem


def test_prepare_sample_probes_the_video_once_and_refuses_an_empty_file(clip: Path, tmp_path: Path) -> None:
    prepared = prepare_sample(Sample(text="a video post", video=VideoRef(path=clip)))
    assert prepared.video is not None and prepared.video.duration_s == pytest.approx(6.0, abs=0.1)
    (tmp_path / "zero.mp4").write_bytes(b"")
    with pytest.raises(InputError, match="video.path: .*empty"):
        prepare_sample(Sample(text="a video post", video=VideoRef(path=tmp_path / "zero.mp4")))


def test_the_sample_id_depends_on_the_video() -> None:
    one = Sample(text="same title", video=VideoRef(path=Path("a.mp4")))
    other = Sample(text="same title", video=VideoRef(path=Path("b.mp4")))
    assert one.id != other.id and Sample(text="same title").id != one.id


@pytest.mark.parametrize("value, seconds", [(3, 3.0), (2.5, 2.5), ("01:05", 65.0), ("1:00:02", 3602.0), ("4s", 4.0)])
def test_times_in_seconds_or_minutes(value: object, seconds: float) -> None:
    assert parse_seconds(value, "start_s") == seconds  # type: ignore[arg-type]


def test_a_time_that_is_not_one_names_its_argument() -> None:
    with pytest.raises(InputError, match="start_s"):
        parse_seconds("soon", "start_s")
