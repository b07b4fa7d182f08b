"""Hostile pages, images and videos for the crash suite, generated on the spot (nothing big is committed)."""

from __future__ import annotations

import io
import json
import struct
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
from PIL import Image

from tests.support.paths import EXAMPLE_IMAGE
from tests.support.videos import make_clip

PARAGRAPH = "<p>The council met on Tuesday to discuss the flood defences of the old harbour town, and voted to rebuild them.</p>\n"
ARTICLE = f"<html><head><title>Harbour town votes</title></head><body><article>{PARAGRAPH * 12}</article></body></html>"


# --- pages ------------------------------------------------------------------------------------

def hostile_pages() -> dict[str, str | bytes]:
    """Pages a parser may choke on (each a few MB at most; the 50 MB page is written by :func:`write_huge_page`)."""
    deep_json = "[" * 100_000 + "]" * 100_000
    return {
        "nested 100,000 tags deep": "<html><body>" + "<div>" * 100_000 + PARAGRAPH + "</div>" * 100_000 + "</body></html>",
        "NUL bytes": ARTICLE.replace("council", "coun\x00cil").replace("<p>", "<p>\x00"),
        "NUL bytes, undecoded": ARTICLE.encode().replace(b"flood", b"fl\x00od"),
        "invalid and mixed encodings": (b"<html><head><meta charset='utf-8'></head><body><article>"
                                        + bytes(range(256)) * 40 + b"\xff\xfe\xc3\x28 caf\xe9 \xe2\x82 "
                                        + PARAGRAPH.encode("utf-16") + PARAGRAPH.encode("latin-1") * 3
                                        + "Überschwemmung".encode("cp1252") + b"</article></body></html>"),
        "a declared charset that does not exist": b"<html><head><meta charset='x-no-such'></head><body>" + PARAGRAPH.encode() * 5,
        "a 10 MB attribute": "<html><body><div title='" + "a" * 10_000_000 + "'>" + PARAGRAPH * 8 + "</div></body></html>",
        "very many tags": "<html><body>" + "<span>x</span>" * 300_000 + "</body></html>",
        "JSON-LD nested 100,000 deep": ("<html><head><script type='application/ld+json'>" + deep_json + "</script>"
                                        "<script type='application/ld+json'>{\"@type\": \"ClaimReview\"}</script></head>"
                                        "<body><article>" + PARAGRAPH * 8 + "</article></body></html>"),
        "not HTML at all": bytes(np.random.default_rng(7).integers(0, 256, 200_000, dtype=np.uint8)),
        "empty": "",
    }


def write_huge_page(path: Path, megabytes: int = 50) -> Path:
    """A page of ``megabytes`` MB of paragraphs, written in pieces."""
    piece = (PARAGRAPH * 1000).encode()
    with path.open("wb") as out:
        out.write(b"<html><body><article>")
        for _ in range(megabytes * 1024 * 1024 // len(piece) + 1):
            out.write(piece)
        out.write(b"</article></body></html>")
    return path


def make_trace(root: Path, pages: dict[str, bytes | str], caption: str = "The harbour town voted on its flood defences") -> str:
    """An MR2-style trace of one claim whose reverse image search found ``pages`` (address -> saved HTML,
    saved as ``queries_dataset/merge/inv/1/page<N>.html`` in order); returns the claim's id."""
    merge = root / "queries_dataset" / "merge"
    (merge / "img").mkdir(parents=True)
    (merge / "inv" / "1").mkdir(parents=True)
    (merge / "direct" / "1").mkdir(parents=True)
    image = merge / "img" / "1.jpg"
    image.write_bytes(EXAMPLE_IMAGE.read_bytes())
    entries = []
    for number, (url, html) in enumerate(pages.items()):
        name = f"page{number}.html"
        (merge / "inv" / "1" / name).write_bytes(html.encode() if isinstance(html, str) else html)
        entries.append({"page_link": url, "title": f"page {number}", "html_path": f"crawl/{name}"})
    (merge / "inv" / "1" / "inverse_annotation.json").write_text(json.dumps({"all_fully_matched_captions": entries}))
    (merge / "direct" / "1" / "direct_annotation.json").write_text(json.dumps({}))
    items = {"1": {"caption": caption, "label": 0, "image_path": "img/1.jpg", "direct_path": "direct/1", "inv_path": "inv/1"}}
    (root / "dataset_items_test.json").write_text(json.dumps(items))
    return "1"


# --- images -----------------------------------------------------------------------------------

def _saved(image: Image.Image, fmt: str, **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def nested_exif(size: int = 60_000) -> bytes:
    """An EXIF block of about ``size`` bytes: a chain of IFDs, each pointing to the next as its Exif IFD
    and as its next IFD, the last pointing back to the first."""
    count = (size - 8) // 18
    tiff = bytearray(b"II*\x00" + struct.pack("<I", 8))
    for index in range(count):
        here = 8 + index * 18
        following = here + 18 if index + 1 < count else 8
        tiff += struct.pack("<H", 1) + struct.pack("<HHII", 0x8769, 4, 1, following) + struct.pack("<I", following)
    return b"Exif\x00\x00" + bytes(tiff)


def hostile_images() -> dict[str, bytes]:
    """Images a decoder may choke on; small files all."""
    photo = Image.open(EXAMPLE_IMAGE).convert("RGB")
    jpeg, png = _saved(photo, "JPEG", quality=90), _saved(photo, "PNG")
    gif, webp = _saved(photo.convert("P"), "GIF"), _saved(photo, "WEBP")
    return {
        "decompression bomb (PNG, 1.2 gigapixels declared)": _bomb_png(40_000, 30_000),
        "decompression bomb (PNG within the declared limit, over the decode budget)": _saved(Image.new("1", (6000, 5000)), "PNG"),
        "truncated JPEG": jpeg[: len(jpeg) // 2],
        "JPEG cut inside its header": jpeg[:300],
        "truncated PNG": png[: len(png) // 2],
        "truncated GIF": gif[: len(gif) // 2],
        "truncated WebP": webp[: len(webp) // 2],
        "CMYK JPEG": _saved(photo.convert("CMYK"), "JPEG"),
        "16-bit PNG": _saved(Image.fromarray((np.asarray(photo.convert("L"), dtype=np.uint16) * 257)), "PNG"),
        "EXIF of 60 KB of nested IFDs": _saved(photo, "JPEG", exif=nested_exif()),
    }


def _bomb_png(width: int, height: int) -> bytes:
    """A PNG header that declares ``width`` x ``height`` pixels, with one tiny data chunk."""
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", width, height, 1, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(b"\x00" * 1024)) + chunk(b"IEND", b"")


# --- videos -----------------------------------------------------------------------------------

def _encode(container: av.container.OutputContainer, stream: av.VideoStream, frames: int, fps: int, start: int = 0) -> None:
    for index in range(frames):
        pixels = np.full((stream.height, stream.width, 3), (index * 37) % 255, np.uint8)
        frame = av.VideoFrame.from_ndarray(pixels, format="rgb24")
        frame.pts, frame.time_base = start + index, Fraction(1, fps)
        for packet in stream.encode(frame):
            container.mux(packet)
    for packet in stream.encode():
        container.mux(packet)


def _segment(size: tuple[int, int], start: int, frames: int = 20, fps: int = 10) -> bytes:
    buffer = io.BytesIO()
    with av.open(buffer, "w", format="mpegts") as container:
        stream = container.add_stream("libx264", rate=fps)
        stream.width, stream.height, stream.pix_fmt = size[0], size[1], "yuv420p"
        stream.options = {"preset": "ultrafast", "g": "10"}
        _encode(container, stream, frames, fps, start)
    return buffer.getvalue()


def growing_video(path: Path, small: tuple[int, int] = (64, 64), large: tuple[int, int] = (640, 480)) -> Path:
    """A stream that starts at ``small`` and changes to ``large`` two seconds in (two MPEG-TS segments of one stream)."""
    path.write_bytes(_segment(small, 0) + _segment(large, 20))
    return path


def many_streams(path: Path, streams: int = 300) -> Path:
    """An MP4 with ``streams`` tiny video streams."""
    with av.open(str(path), "w") as container:
        made = []
        for _ in range(streams):
            stream = container.add_stream("mpeg4", rate=1)
            stream.width, stream.height, stream.pix_fmt = 16, 16, "yuv420p"
            made.append(stream)
        for index in range(2):
            for stream in made:
                frame = av.VideoFrame.from_ndarray(np.zeros((16, 16, 3), np.uint8), format="rgb24")
                frame.pts, frame.time_base = index, Fraction(1, 1)
                for packet in stream.encode(frame):
                    container.mux(packet)
        for stream in made:
            for packet in stream.encode():
                container.mux(packet)
    return path


def absurd_dimensions(path: Path, side: int = 0x3000) -> Path:
    """A Matroska file whose header declares ``side`` x ``side`` pixels for a stream of 256 x 256 frames."""
    with av.open(str(path), "w", format="matroska") as container:
        stream = container.add_stream("ffv1", rate=5)
        stream.width, stream.height, stream.pix_fmt = 256, 256, "yuv420p"
        _encode(container, stream, 5, 5)
    data = bytearray(path.read_bytes())
    for element in (b"\xb0\x82\x01\x00", b"\xba\x82\x01\x00"):  # PixelWidth, PixelHeight: 256 in two bytes
        at = data.find(element)
        data[at + 2 : at + 4] = struct.pack(">H", side)
    path.write_bytes(bytes(data))
    return path


def hostile_videos(folder: Path) -> dict[str, Path]:
    clip = make_clip(folder / "clip.mp4", seconds=4)
    data = clip.read_bytes()
    (folder / "truncated.mp4").write_bytes(data[: len(data) // 2])
    (folder / "header-only.mp4").write_bytes(data[:64])
    (folder / "zero.mp4").write_bytes(b"")
    return {
        "truncated MP4": folder / "truncated.mp4",
        "MP4 cut inside its header": folder / "header-only.mp4",
        "zero-length MP4": folder / "zero.mp4",
        "absurd declared dimensions": absurd_dimensions(folder / "absurd.mkv"),
        "hundreds of streams": many_streams(folder / "many.mp4"),
        "a resolution that grows midway": growing_video(folder / "growing.ts"),
    }
