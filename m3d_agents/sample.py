"""What is checked: a post with text, images and perhaps a video.

The model validates structure only (non-empty text, well-formed dates). Limits that a user may
tune, and anything that needs to open a file, live in :func:`m3d_agents.media.images.prepare_sample`, so
that building thousands of Samples from a dataset stays cheap.
"""

from __future__ import annotations

import hashlib
from datetime import date
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, field_validator


class InputLimits(BaseModel):
    """Bounds on what a sample may contain; all are configurable per run."""

    max_text_chars: int = Field(8000, gt=0)
    max_pixels: int = Field(40_000_000, gt=0, description="decompression-bomb guard: the most pixels an image may declare")
    max_decoded_pixels: int = Field(
        16_000_000, gt=0,
        description="the most pixels decoded for one image: a larger JPEG is decoded at a reduced scale, any other "
        "format that large is refused (a small PNG can declare a billion pixels and cost gigabytes to decode)",
    )
    max_image_bytes: int = Field(30 * 1024 * 1024, gt=0)
    max_side: int = Field(1024, gt=0, description="images are resized so that no side exceeds this")
    image_cache_mb: float = Field(
        150.0, ge=0,
        description="the most memory, in MB, that a process keeps of prepared images between samples (their pixels "
        "and the encoding messages send of them), least recently used dropped first; 0 keeps none",
    )
    max_images: int = Field(8, ge=0)
    max_video_bytes: int = Field(200 * 1024 * 1024, gt=0)
    max_video_seconds: float = Field(600.0, gt=0, description="longer videos are refused, not cut")
    max_video_pixels: int = Field(3840 * 2160, gt=0, description="pixels of one frame")


class SampleMetadata(BaseModel):
    model_config = ConfigDict(extra="forbid")

    claim_date: date | None = None
    source_url: str | None = None
    language: str | None = None
    images_authentic: bool = Field(
        False,
        description="the data set guarantees its images are real and unedited, so only the pairing of image "
        "and text is in question (out-of-context data sets: NewsCLIPpings, VERITE); prompts say so",
    )


class VideoRef(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: Path | None = None
    video_id: str | None = None
    transcript: str | None = None
    duration_s: float | None = Field(None, ge=0)
    frames: list[Path] = Field(default_factory=list, description="frames a data set ships instead of the video (FakeVV)")


class Sample(BaseModel):
    """One post to check. ``id`` defaults to a hash of its content, so re-runs are stable."""

    model_config = ConfigDict(extra="forbid")

    id: str = ""
    text: str
    images: list[Path] = Field(default_factory=list)
    video: VideoRef | None = None
    metadata: SampleMetadata = Field(default_factory=SampleMetadata)
    gold_label: str | None = None
    taxonomy: str = "binary"

    @field_validator("text")
    @classmethod
    def _text_not_empty(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("text is empty; a post needs a caption or claim to check")
        return value

    def model_post_init(self, _context: object) -> None:
        if not self.id:
            digest = hashlib.sha256(self.text.encode())
            for path in self.images:
                digest.update(str(path).encode())
            if self.video is not None:
                # Two posts with one title and different videos must not share an id.
                for part in (self.video.path, self.video.video_id, *self.video.frames):
                    if part is not None:
                        digest.update(f"video:{part}".encode())
            self.id = digest.hexdigest()[:16]
        if self.gold_label is not None:
            from m3d_agents.labels import get_taxonomy

            self.gold_label = get_taxonomy(self.taxonomy).normalise(self.gold_label)
