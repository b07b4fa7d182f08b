"""FakeVV as Fact-R1 releases its test set: a JSON array of chat rows with eight frames each.

Each row has a user message ``<image>×8 The news title is '…', the news audio is '…', is this
multimodal content manipulated? …`` (the audio part is absent when the video has no speech), an
assistant message ``<answer>Yes.</answer>`` (Yes: fake, No: real) and ``images``, the eight frame
paths. Title and transcript are read back out of the prompt; the frames go into
``VideoRef.frames``. A frame that is not on disk (the file with URLs in place of paths) follows
``missing_images``; ``frames=optional`` loads such rows without their frames instead.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from m3d_agents.datasets.base import ImageResolver, LoadedDataset, LoaderOptions, Skips, dataset, make_sample, map_label, read_records
from m3d_agents.errors import InputError
from m3d_agents.sample import SampleMetadata, VideoRef

TAXONOMY = "binary"
LABELS: dict[str, str | None] = {"yes": "fake", "no": "real"}
_TITLE = re.compile(r"The news title is '(.*?)',\s*(?:the news audio is '(.*?)',\s*)?is this", re.DOTALL)
_ANSWER = re.compile(r"<answer>\s*(.*?)\s*</answer>", re.IGNORECASE | re.DOTALL)


class Options(LoaderOptions):
    image_root: Path | None = None
    frames: Literal["required", "optional"] = "required"


def read_prompt(text: str, field: str) -> tuple[str, str | None]:
    """Title and transcript from a FakeVV prompt."""
    match = _TITLE.search(text)
    if match is None:
        raise InputError(field, "no \"The news title is '…'\" in the prompt; not a FakeVV row")
    return match.group(1).strip(), (match.group(2) or "").strip() or None


@dataset("fakevv", "FakeVV test JSON of Fact-R1 (8 frames, title and audio in the prompt, Yes/No)", Options)
def load(path: Path, options: Options) -> LoadedDataset:
    skips = Skips()
    resolver = ImageResolver(options.image_root or path.parent, options.missing_images, skips,
                           options.images_outside_root)
    samples = []
    for index, row in enumerate(read_records(path)):
        messages = row.require("messages")
        if not isinstance(messages, list):
            raise InputError(row.field("messages"), "not a list of messages")
        user = next((m for m in messages if isinstance(m, dict) and m.get("role") == "user"), None)
        answer = next((m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"), None)
        if user is None or answer is None:
            raise InputError(row.field("messages"), "needs a user and an assistant message")
        title, transcript = read_prompt(str(user.get("content", "")), row.field("messages[0].content"))
        found = _ANSWER.search(str(answer.get("content", "")))
        said = (found.group(1) if found else str(answer.get("content", ""))).strip().rstrip(".").strip()
        label = map_label(row, "messages[1].content", said, LABELS, skips)
        if label is None:
            continue
        references = [str(p) for p in row.data.get("images") or []]
        frames: list[Path] | None
        if options.frames == "optional":
            frames = [p for p in (Path(r) for r in references) if p.is_file()] or [
                p for p in ((resolver.root / r.lstrip("/")) for r in references) if p.is_file()
            ]
        else:
            frames = resolver.resolve_all(references, row, "images")
            if frames is None:
                continue
        sample = make_sample(
            row, skips, id=f"fakevv-{index}", text=title, gold_label=label, taxonomy=TAXONOMY,
            video=VideoRef(transcript=transcript, frames=frames), metadata=SampleMetadata(language="en"),
        )
        if sample is not None:
            samples.append(sample)
    return LoadedDataset.build("fakevv", path, options, samples, skips, TAXONOMY)
