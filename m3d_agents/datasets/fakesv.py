"""FakeSV (Chinese short videos) in its public schema, and data sets in its style: JSON Lines keyed by ``video_id``.

The public ``data.json`` holds ``video_id``, ``keywords`` and ``annotation`` only: 假 (fake), 真
(real) or 辟谣 (a debunking video; older copies and the paper say 辨析). A debunking video is
neither the fake claim nor plain real news, so the binary task has no honest place for it: it is
skipped and counted. The text is the ``title`` (or ``description``) when the licensed release
gives one and the ``keywords`` with it (the paper's metadata is "titles and keywords"), plus the
on-screen ``ocr`` text when given. The transcript is the row's ``transcript`` when it has one, else,
with ``asr_model=FOLDER``, what that speech recogniser hears in the video file (cached per video;
:mod:`m3d_agents.media.asr`); without either the post has none, and the prompt says so. The video is
referenced by id, and by file when ``<video_root>/<video_id>.mp4`` exists. ``split_file`` keeps
the ids listed in a file (FakingRecipe's ``vid_time3_test.txt``); ``split=temporal`` keeps the
newest share by ``publish_time``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from pydantic import Field

from m3d_agents.datasets.base import dataset, LoadedDataset, LoaderOptions, Skips, make_sample, map_label, read_records, read_text_file, require_file
from m3d_agents.datasets.splits import Split, temporal_split
from m3d_agents.errors import InputError
from m3d_agents.sample import SampleMetadata, VideoRef

TAXONOMY = "binary"
LABELS: dict[str, str | None] = {"假": "fake", "真": "real", "辟谣": None, "辨析": None, "fake": "fake", "real": "real"}


class Options(LoaderOptions):
    video_root: Path | None = None
    language: str | None = None
    split_file: Path | None = None
    split: Split = "all"
    test_fraction: float = 0.15
    asr_model: Path | None = Field(None, description="a Whisper-style model folder that transcribes videos without a transcript")
    asr_language: str | None = Field(None, description="the language the recogniser is told (None: it detects)")


def publish_date(value: object, field: str) -> datetime | None:
    """A publication time in seconds or milliseconds since 1970, or None when absent."""
    if value in (None, ""):
        return None
    try:
        stamp = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise InputError(field, f"{value!r} is not a timestamp") from None
    return datetime.fromtimestamp(stamp / 1000 if stamp > 1e11 else stamp, tz=timezone.utc)


def split_ids(path: Path) -> set[str]:
    return {line.strip() for line in read_text_file(require_file(path, "split file")).splitlines() if line.strip()}


def post_text(data: dict[str, object]) -> str:
    title = str(data.get("title") or data.get("description") or "").strip()
    keywords = data.get("keywords")
    if isinstance(keywords, list):
        keywords = " ".join(str(k) for k in keywords)
    keywords = str(keywords or "").strip()
    if not title:
        text = keywords
    elif keywords and keywords not in title:
        text = f"{title}\nKeywords: {keywords}"
    else:
        text = title
    ocr = str(data.get("ocr") or "").strip()
    return f"{text}\nOn-screen text: {ocr}" if ocr and ocr != text else text


@dataclass(frozen=True)
class VideoFormat:
    """What differs between data sets in FakeSV's style: the name, the ids, the labels, the text, the time field."""

    kind: str
    id_prefix: str
    labels: dict[str, str | None]
    text: Callable[[dict[str, object]], str]
    time_fields: tuple[str, ...]
    language: str | None = None
    transcript: bool = False


def load_video_rows(path: Path, options: Options, form: VideoFormat) -> LoadedDataset:
    """JSON Lines keyed by ``video_id``: labels mapped (or skipped and counted), videos found by id,
    publication dates read, and the split applied."""
    skips = Skips()
    video_root = options.video_root or path.parent / "videos"
    wanted = split_ids(options.split_file) if options.split_file else None
    samples = []
    transcriber = None
    if options.asr_model is not None:
        from m3d_agents.media.asr import Transcriber

        transcriber = Transcriber(options.asr_model, language=options.asr_language)
    for row in read_records(path):
        video_id = row.text("video_id")
        if wanted is not None and video_id not in wanted:
            skips.add("not in the split file")
            continue
        label = map_label(row, "annotation", row.require("annotation"), form.labels, skips)
        if label is None:
            continue
        video_file = video_root / f"{video_id}.mp4"
        stamp = next((row.data[f] for f in form.time_fields if row.data.get(f) not in (None, "")), None)
        published = publish_date(stamp, row.field(form.time_fields[0]))
        transcript = str(row.data.get("transcript") or "") or None if form.transcript else None
        if transcript is None and transcriber is not None and video_file.is_file():
            transcript = transcriber.transcribe(video_file).text
        sample = make_sample(
            row, skips, id=f"{form.id_prefix}{video_id}", text=form.text(row.data), gold_label=label, taxonomy=TAXONOMY,
            video=VideoRef(video_id=video_id, path=video_file if video_file.is_file() else None, transcript=transcript),
            metadata=SampleMetadata(claim_date=published.date() if published else None, language=options.language or form.language),
        )
        if sample is not None:
            samples.append(sample)
    samples = temporal_split(samples, options.split, options.test_fraction, skips)
    return LoadedDataset.build(form.kind, path, options, samples, skips, TAXONOMY)


FAKESV = VideoFormat("fakesv", "video-", LABELS, post_text, ("publish_time", "publish_time_norm"), transcript=True)


@dataset("fakesv", "FakeSV (public schema: keywords, 辟谣 skipped) and FakeSV-style JSON Lines of video ids", Options)
def load(path: Path, options: Options) -> LoadedDataset:
    return load_video_rows(path, options, FAKESV)
