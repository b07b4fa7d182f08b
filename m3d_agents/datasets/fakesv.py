"""Short-video data sets in the style of FakeSV (also FakeTT): JSON Lines keyed by ``video_id``.

FakeSV annotates ``annotation`` as 假 (fake), 真 (real) or 辨析 (a debunking video); FakeTT
uses ``fake``/``real``. A debunking video is neither the fake claim nor plain real news, so the
binary task has no honest place for it: it is skipped and counted. The text is the ``title`` (or
``description``) plus the on-screen ``ocr`` text when given; the video is referenced by id, and
by file when ``<video_root>/<video_id>.mp4`` exists.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from m3d_agents.datasets.base import dataset, LoadedDataset, LoaderOptions, Skips, make_sample, map_label, read_records
from m3d_agents.sample import SampleMetadata, VideoRef

TAXONOMY = "binary"
LABELS: dict[str, str | None] = {"假": "fake", "真": "real", "辨析": None, "fake": "fake", "real": "real"}


class Options(LoaderOptions):
    video_root: Path | None = None
    language: str | None = None


def _date(value: object) -> datetime | None:
    if value in (None, ""):
        return None
    stamp = float(value)  # type: ignore[arg-type]
    return datetime.fromtimestamp(stamp / 1000 if stamp > 1e11 else stamp, tz=timezone.utc)


@dataset("fakesv", "FakeSV / FakeTT style JSON Lines of video ids", Options)
def load(path: Path, options: Options) -> LoadedDataset:
    skips = Skips()
    video_root = options.video_root or path.parent / "videos"
    samples = []
    for row in read_records(path):
        label = map_label(row, "annotation", row.require("annotation"), LABELS, skips)
        if label is None:
            continue
        video_id = row.text("video_id")
        title = str(row.data.get("title") or row.data.get("description") or "")
        ocr = str(row.data.get("ocr") or "").strip()
        text = f"{title}\nOn-screen text: {ocr}" if ocr and ocr != title else title
        video_file = video_root / f"{video_id}.mp4"
        published = _date(row.data.get("publish_time") or row.data.get("publish_time_norm"))
        sample = make_sample(
            row, skips, id=f"video-{video_id}", text=text, gold_label=label, taxonomy=TAXONOMY,
            video=VideoRef(video_id=video_id, path=video_file if video_file.is_file() else None),
            metadata=SampleMetadata(claim_date=published.date() if published else None, language=options.language),
        )
        if sample is not None:
            samples.append(sample)
    return LoadedDataset.build("fakesv", path, options, samples, skips, TAXONOMY)
