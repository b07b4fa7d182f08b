"""FakeTT (English TikTok videos, from FakingRecipe): ``video_id``, ``description``, ``annotation`` (fake|real),
``user_certify``, ``user_description``, ``publish_time`` and ``event``, as JSON Lines.

The text is the ``description``; the event name is kept out of the text (it names the debunked
story). Videos are referenced by id, and by file when ``<video_root>/<video_id>.mp4`` exists.
``split=temporal`` keeps the newest share by ``publish_time`` (FakingRecipe's protocol).
"""

from __future__ import annotations

from pathlib import Path

from m3d_agents.datasets.base import dataset, LoadedDataset, Skips, make_sample, map_label, read_records
from m3d_agents.datasets.fakesv import Options, publish_date, split_ids
from m3d_agents.datasets.splits import temporal_split
from m3d_agents.sample import SampleMetadata, VideoRef

TAXONOMY = "binary"
LABELS: dict[str, str | None] = {"fake": "fake", "real": "real"}


@dataset("fakett", "FakeTT JSON Lines (description, annotation fake|real, publish_time, event)", Options)
def load(path: Path, options: Options) -> LoadedDataset:
    skips = Skips()
    video_root = options.video_root or path.parent / "videos"
    wanted = split_ids(options.split_file) if options.split_file else None
    samples = []
    for row in read_records(path):
        video_id = row.text("video_id")
        if wanted is not None and video_id not in wanted:
            skips.add("not in the split file")
            continue
        label = map_label(row, "annotation", row.require("annotation"), LABELS, skips)
        if label is None:
            continue
        video_file = video_root / f"{video_id}.mp4"
        published = publish_date(row.data.get("publish_time"), row.field("publish_time"))
        sample = make_sample(
            row, skips, id=f"fakett-{video_id}", text=str(row.data.get("description") or "").strip(), gold_label=label,
            taxonomy=TAXONOMY, video=VideoRef(video_id=video_id, path=video_file if video_file.is_file() else None),
            metadata=SampleMetadata(claim_date=published.date() if published else None, language=options.language or "en"),
        )
        if sample is not None:
            samples.append(sample)
    samples = temporal_split(samples, options.split, options.test_fraction, skips)
    return LoadedDataset.build("fakett", path, options, samples, skips, TAXONOMY)
