"""How the video is put in front of the verifier: frames as images for a vision model, as text otherwise.

A text-only model (the embedded default) cannot see frames, so each frame is described by what
tools measured: its time, its mean colour and brightness, and the on-screen text OCR reads. The
paper gave baselines without video support textual descriptions in the same spirit. Nothing is
described that was not measured.
"""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from autogen_core import Image as AgentImage
from PIL import Image

from m3d_agents.errors import InputError
from m3d_agents.media.images import PreparedImage, PreparedSample, load_image
from m3d_agents.media.message_images import message_image
from m3d_agents.media.video import overview_frames
from m3d_agents.tools.analysis.ocr import read_text


@dataclass(frozen=True)
class ShownFrame:
    label: str
    image: Image.Image


def shown_frames(prepared: PreparedSample, k: int) -> list[ShownFrame]:
    """The overview frames with their times, or the frames a data set ships, or none."""
    if prepared.video is not None:
        return [ShownFrame(f"{f.time_s:.2f} s", f.image) for f in overview_frames(prepared.video.path, k, info=prepared.video)]
    video = prepared.sample.video
    if video is not None and video.frames:
        chosen = video.frames[:k]
        images = [load_image(p, field=f"video.frames[{i}]") for i, p in enumerate(chosen)]
        return [ShownFrame(f"frame {i + 1} of {len(chosen)}", img.image) for i, img in enumerate(images)]
    return []


def as_prepared(image: Image.Image, name: str) -> PreparedImage:
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    sha = hashlib.sha256(buffer.getvalue()).hexdigest()
    return PreparedImage(source=Path(name), sha256=sha, image=image, original_size=image.size, format="PNG")


def describe(image: Image.Image, ocr: bool) -> str:
    pixels = np.asarray(image.convert("RGB"), dtype=float).reshape(-1, 3)
    r, g, b = (int(v) for v in pixels.mean(axis=0))
    parts = [f"mean colour RGB({r}, {g}, {b}), brightness {int(pixels.mean())}/255"]
    if ocr:
        try:
            parts.append(read_text(as_prepared(image, "frame.png")).for_agents())
        except InputError as exc:
            parts.append(f"OCR: unavailable: {exc.problem}")
    return "; ".join(parts)


def video_context(prepared: PreparedSample, frames: list[ShownFrame], vision: bool, ocr: bool) -> str:
    """The text that stands for the video in the first prompt."""
    info = prepared.video
    if info is not None:
        head = f"The video: {info.describe()}."
    elif frames:
        head = "The video file is not available; the data set ships these frames of it."
    else:
        return "The video itself is not available for this post: judge from the text and transcript, or search."
    if vision:
        times = ", ".join(f.label for f in frames)
        return f"{head} {len(frames)} frames spread over it are attached below, in order ({times})."
    lines = [f"{head} You cannot see images; what tools measured in {len(frames)} frames spread over it:"]
    lines += [f"- {f.label}: {describe(f.image, ocr)}" for f in frames]
    return "\n".join(lines)


def images_of(frames: list[ShownFrame]) -> list[AgentImage]:
    return [message_image(f.image) for f in frames]
