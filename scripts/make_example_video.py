"""Make the example video post in examples/video/: a short synthetic clip with burnt-in captions.

The clip is generated, not filmed, so it carries no third-party rights and is reproducible: four
scenes of one second each (a sky, water rising, a street sign with on-screen text, a date card),
160x120 pixels at 10 frames per second, H.264 in MP4, a few kilobytes. Run it again to rebuild.
"""

from __future__ import annotations

import sys
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from PIL import Image, ImageDraw

OUT = Path(__file__).resolve().parents[1] / "examples" / "video"
WIDTH, HEIGHT, FPS = 160, 120, 10
SCENES = [
    ((90, 140, 210), "STORM"),
    ((40, 80, 140), "WATER RISING"),
    ((70, 70, 70), "MAIN ST"),
    ((20, 20, 20), "2012"),
]


def scene(colour: tuple[int, int, int], caption: str, progress: float) -> Image.Image:
    image = Image.new("RGB", (WIDTH, HEIGHT), colour)
    draw = ImageDraw.Draw(image)
    level = int(HEIGHT * (0.55 - 0.25 * progress))
    draw.rectangle((0, level, WIDTH, HEIGHT), fill=(30, 60, 90))
    draw.rectangle((8, 8, WIDTH - 8, 30), fill=(255, 255, 255))
    draw.text((14, 12), caption, fill=(0, 0, 0))
    return image


def make(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with av.open(str(path), mode="w") as container:
        stream = container.add_stream("libx264", rate=FPS)
        stream.width, stream.height, stream.pix_fmt = WIDTH, HEIGHT, "yuv420p"
        stream.options = {"preset": "veryslow", "crf": "30", "g": str(FPS)}
        index = 0
        for colour, caption in SCENES:
            for step in range(FPS):
                frame = av.VideoFrame.from_ndarray(np.asarray(scene(colour, caption, step / FPS)), format="rgb24")
                frame.pts, frame.time_base = index, Fraction(1, FPS)
                index += 1
                for packet in stream.encode(frame):
                    container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return path


if __name__ == "__main__":
    target = Path(sys.argv[1]) if len(sys.argv) > 1 else OUT / "flood.mp4"
    print(make(target))
