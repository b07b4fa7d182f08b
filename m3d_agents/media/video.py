"""Reading video posts with PyAV: probe a file, sample frames in a time window, tile frames into a grid.

Video arrives from data sets and users like images do, so every way a file can be wrong (missing,
empty, not a video, no picture stream, too long, too large) becomes an :class:`InputError` naming
``video.path`` (or the window argument at fault), never a decoder exception inside an agent.

Frames are found by seeking to the key frame before each wanted time and decoding forward to the
nearest frame, so sampling four frames from a long video costs a few key-frame intervals of
decoding, not the whole file. Every frame decoded on the way is held to ``max_video_pixels``, not
only the first (a stream may change its resolution midway), and frames come back scaled to
``max_side`` like images.

Probing and decoding run in a worker of the run's parser pool (:mod:`m3d_agents.isolation`): a
file that crashes FFmpeg, hangs it or makes it allocate without end costs that video alone, and
is reported in words.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import av
from PIL import Image

from m3d_agents.errors import InputError
from m3d_agents.isolation import Item, parse
from m3d_agents.media.files import checked_size
from m3d_agents.sample import InputLimits

FIELD = "video.path"


@dataclass(frozen=True)
class VideoInfo:
    """What a probe learns about a video file, without decoding any picture."""

    path: Path
    duration_s: float
    fps: float
    width: int
    height: int
    has_audio: bool
    size_bytes: int

    @property
    def frame_interval_s(self) -> float:
        return 1.0 / self.fps if self.fps > 0 else 0.04

    def describe(self) -> str:
        audio = "with an audio track" if self.has_audio else "without audio"
        return f"{self.duration_s:.1f} s, {self.width}x{self.height} pixels at {self.fps:.1f} frames per second, {audio}"


@dataclass(frozen=True)
class Frame:
    """One decoded frame and the time it is shown, in seconds from the start."""

    time_s: float
    image: Image.Image


def _open(file: Path, path: Path, field: str) -> av.container.InputContainer:
    try:
        return av.open(str(file), mode="r")
    except (av.error.InvalidDataError, av.error.FFmpegError, UnicodeDecodeError) as exc:
        raise InputError(field, f"{path} is not a video file FFmpeg can read ({type(exc).__name__})") from exc


def probe(path: Path | str, limits: InputLimits | None = None, field: str = FIELD) -> VideoInfo:
    """Check a video file against the limits and read its duration, frame rate and size (FFmpeg reads it in a
    parser worker)."""
    limits = limits or InputLimits()
    path = Path(path)
    size = checked_size(path, limits.max_video_bytes, field)
    item = Item("video", str(path), "the video decoder", field)
    return parse(item, read_info, path.resolve(), path, size, limits, field)


def read_info(file: Path, path: Path, size: int, limits: InputLimits, field: str = FIELD) -> VideoInfo:
    """What :func:`probe` asks a parser worker: FFmpeg's reading of ``file`` (named ``path`` in errors)."""
    with _open(file, path, field) as container:
        if not container.streams.video:
            raise InputError(field, f"{path} has no video stream")
        stream = container.streams.video[0]
        width, height = int(stream.codec_context.width or 0), int(stream.codec_context.height or 0)
        if width <= 0 or height <= 0:
            raise InputError(field, f"{path} has a video stream without a picture size")
        rate = stream.average_rate or stream.guessed_rate or stream.base_rate
        fps = float(rate) if rate else 0.0
        if stream.duration is not None and stream.time_base is not None:
            duration = float(stream.duration * stream.time_base)
        elif container.duration is not None:
            duration = container.duration / av.time_base
        elif stream.frames and fps:
            duration = stream.frames / fps
        else:
            raise InputError(field, f"{path} does not say how long it is")
        has_audio = bool(container.streams.audio)
    if not math.isfinite(duration) or duration <= 0:
        raise InputError(field, f"{path} has no playable length")
    if duration > limits.max_video_seconds:
        raise InputError(field, f"{path} lasts {duration:.1f} s, over the limit of {limits.max_video_seconds:g} s")
    if width * height > limits.max_video_pixels:
        raise InputError(
            field, f"{path} is {width}x{height} = {width * height} pixels a frame, over the limit of {limits.max_video_pixels}"
        )
    return VideoInfo(path=path, duration_s=duration, fps=fps, width=width, height=height, has_audio=has_audio, size_bytes=size)


def window_times(start_s: float, end_s: float, k: int) -> list[float]:
    """The centres of ``k`` equal parts of the window: frame i at ``start + (i + 0.5)(end - start)/k``."""
    step = (end_s - start_s) / k
    return [start_s + (i + 0.5) * step for i in range(k)]


def check_window(info: VideoInfo, start_s: float, end_s: float) -> tuple[float, float]:
    """The window clamped to the video; a reversed window or one that starts after the end is an error.

    A window shorter than one frame interval is widened to one second around its centre, so that
    four distinct frames can come out of it.
    """
    for name, value in (("start_s", start_s), ("end_s", end_s)):
        if not math.isfinite(value):
            raise InputError(name, f"{value} is not a number of seconds")
    if end_s <= start_s:
        raise InputError("end_s", f"the window ends at {end_s:g} s, not after its start at {start_s:g} s")
    if start_s >= info.duration_s:
        raise InputError("start_s", f"{start_s:g} s is past the end of the video, which lasts {info.duration_s:.1f} s")
    start, end = max(0.0, start_s), min(info.duration_s, end_s)
    if end - start < info.frame_interval_s:
        centre = (start + end) / 2
        start, end = max(0.0, centre - 0.5), min(info.duration_s, centre + 0.5)
    return start, end


def _frame_time(frame: av.VideoFrame) -> float | None:
    if frame.pts is None or frame.time_base is None:
        return None
    return float(frame.pts * frame.time_base)


def decode_at(path: Path, times: Sequence[float], field: str = FIELD, limits: InputLimits | None = None) -> list[Frame]:
    """The frame shown nearest each time (times in increasing order), decoded in a parser worker."""
    path = Path(path)
    item = Item("video", str(path), "the video decoder", field)
    decoded = parse(item, decode_frames, path.resolve(), path, list(times), limits or InputLimits(), field, deadline="analysis")
    return [Frame(time_s=time_s, image=Image.frombytes("RGB", size, pixels)) for time_s, size, pixels in decoded]


def decode_frames(
    file: Path, path: Path, times: Sequence[float], limits: InputLimits, field: str = FIELD
) -> list[tuple[float, tuple[int, int], bytes]]:
    """What :func:`decode_at` asks a parser worker: (time, size, RGB pixels) per frame of ``file`` (named ``path``)."""
    frames: list[tuple[float, tuple[int, int], bytes]] = []
    with _open(file, path, field) as container:
        if not container.streams.video:
            raise InputError(field, f"{path} has no video stream")
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        time_base = stream.time_base
        for wanted in times:
            if time_base is not None:
                container.seek(max(0, int(wanted / time_base)), stream=stream, backward=True, any_frame=False)
            best: tuple[float, av.VideoFrame] | None = None
            try:
                for frame in container.decode(stream):
                    shown = _frame_time(frame)
                    _check_frame_size(frame, shown, path, limits, field)
                    if shown is None:
                        continue
                    if best is None or abs(shown - wanted) < abs(best[0] - wanted):
                        best = (shown, frame)
                    if shown >= wanted:
                        break
            except av.error.FFmpegError as exc:
                raise InputError(field, f"{path} could not be decoded near {wanted:.2f} s: {exc}") from exc
            if best is None:
                raise InputError(field, f"{path} has no decodable frame near {wanted:.2f} s")
            picture = best[1].to_image().convert("RGB")
            if max(picture.size) > limits.max_side:
                picture.thumbnail((limits.max_side, limits.max_side), Image.Resampling.BILINEAR)
            frames.append((round(best[0], 3), picture.size, picture.tobytes()))
    return frames


def _check_frame_size(frame: av.VideoFrame, shown: float | None, path: Path, limits: InputLimits, field: str) -> None:
    """Every decoded frame within ``max_video_pixels``: the probe saw only the first, and a stream may grow midway."""
    pixels = int(frame.width) * int(frame.height)
    if pixels > limits.max_video_pixels:
        when = f" at {shown:.2f} s" if shown is not None else ""
        raise InputError(field, f"{path} changes to {frame.width}x{frame.height} = {pixels} pixels a frame{when}, "
                                f"over the limit of {limits.max_video_pixels}")


def sample_frames(
    path: Path | str, start_s: float, end_s: float, k: int = 4, limits: InputLimits | None = None, info: VideoInfo | None = None
) -> list[Frame]:
    """``k`` frames spread uniformly over ``[start_s, end_s]`` (clamped to the video), with their times."""
    if k < 1:
        raise InputError("k", f"{k} frames; ask for at least one")
    info = info or probe(path, limits)
    start, end = check_window(info, start_s, end_s)
    return decode_at(info.path, window_times(start, end, k), limits=limits)


def overview_frames(path: Path | str, k: int = 8, limits: InputLimits | None = None, info: VideoInfo | None = None) -> list[Frame]:
    """``k`` frames spread over the whole video: what a model sees of it first."""
    info = info or probe(path, limits)
    return sample_frames(info.path, 0.0, info.duration_s, k, limits, info)


def grid(images: Sequence[Image.Image], rows: int = 2, cols: int = 2, max_side: int = 1024) -> Image.Image:
    """Tile images row by row into one picture whose longest side is at most ``max_side``.

    Every cell has the size of the first image scaled to fit, so the tiles line up whatever the
    inputs; a missing tile stays black.
    """
    if not images:
        raise InputError("images", "a grid needs at least one image")
    if len(images) > rows * cols:
        raise InputError("images", f"{len(images)} images do not fit a {rows}x{cols} grid")
    width, height = images[0].size
    scale = min(1.0, max_side / (cols * width), max_side / (rows * height))
    cell = (max(1, int(width * scale)), max(1, int(height * scale)))
    canvas = Image.new("RGB", (cell[0] * cols, cell[1] * rows))
    for index, image in enumerate(images):
        tile = image.convert("RGB").resize(cell, Image.Resampling.BILINEAR)
        canvas.paste(tile, ((index % cols) * cell[0], (index // cols) * cell[1]))
    return canvas


def parse_seconds(value: float | int | str, field: str) -> float:
    """Seconds from a number or an ``MM:SS`` / ``HH:MM:SS`` string (as a model may write them)."""
    if isinstance(value, bool):
        raise InputError(field, f"{value!r} is not a time")
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip().rstrip("s").strip()
    try:
        parts = [float(p) for p in text.split(":")]
    except ValueError:
        raise InputError(field, f"{value!r} is not seconds or MM:SS") from None
    if not 1 <= len(parts) <= 3:
        raise InputError(field, f"{value!r} is not seconds or MM:SS")
    seconds = 0.0
    for part in parts:
        seconds = seconds * 60 + part
    return seconds
