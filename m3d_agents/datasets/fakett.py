"""FakeTT (English TikTok videos, from FakingRecipe): ``video_id``, ``description``, ``annotation`` (fake|real),
``user_certify``, ``user_description``, ``publish_time`` and ``event``, as JSON Lines.

The text is the ``description``; the event name is kept out of the text (it names the debunked
story). The transcript is the row's ``transcript`` when present, else what ``asr_model`` hears
(the options are FakeSV's). Videos are referenced by id, and by file when ``<video_root>/<video_id>.mp4`` exists.
``split=temporal`` keeps the newest share by ``publish_time`` (FakingRecipe's protocol).
"""

from __future__ import annotations

from pathlib import Path

from m3d_agents.datasets.base import dataset, LoadedDataset
from m3d_agents.datasets.fakesv import Options, VideoFormat, load_video_rows

TAXONOMY = "binary"
LABELS: dict[str, str | None] = {"fake": "fake", "real": "real"}


def description(data: dict[str, object]) -> str:
    return str(data.get("description") or "").strip()


FAKETT = VideoFormat("fakett", "fakett-", LABELS, description, ("publish_time",), language="en", transcript=True)


@dataset("fakett", "FakeTT JSON Lines (description, annotation fake|real, publish_time, event)", Options)
def load(path: Path, options: Options) -> LoadedDataset:
    return load_video_rows(path, options, FAKETT)
