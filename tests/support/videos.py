"""Small generated video clips for tests: one known colour per second, so sampling can be checked exactly."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np

COLOURS = [(220, 30, 30), (30, 200, 30), (30, 30, 220), (220, 220, 30), (30, 220, 220), (220, 30, 220),
           (240, 240, 240), (20, 20, 20), (128, 64, 0), (0, 128, 64)]


def colour_of_second(second: int) -> tuple[int, int, int]:
    return COLOURS[second % len(COLOURS)]


def make_clip(path: Path, seconds: int = 6, fps: int = 10, size: tuple[int, int] = (64, 48), audio: bool = False) -> Path:
    """An H.264 clip whose frames in second s are all ``colour_of_second(s)``; with ``audio``, a 440 Hz tone."""
    width, height = size
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        stream.options = {"preset": "ultrafast", "g": str(fps)}
        sound = container.add_stream("aac", rate=16000) if audio else None
        for index in range(seconds * fps):
            pixels = np.zeros((height, width, 3), np.uint8)
            pixels[:] = colour_of_second(index // fps)
            frame = av.VideoFrame.from_ndarray(pixels, format="rgb24")
            frame.pts, frame.time_base = index, Fraction(1, fps)
            for packet in stream.encode(frame):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
        if sound is not None:
            rate, chunk = 16000, 1024
            total = seconds * rate
            for start in range(0, total, chunk):
                t = np.arange(start, min(total, start + chunk)) / rate
                wave = (0.2 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)[None, :]
                samples = av.AudioFrame.from_ndarray(wave, format="fltp", layout="mono")
                samples.sample_rate, samples.pts = rate, start
                for packet in sound.encode(samples):
                    container.mux(packet)
            for packet in sound.encode():
                container.mux(packet)
    return path
