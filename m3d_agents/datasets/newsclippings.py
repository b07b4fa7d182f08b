"""NewsCLIPpings ``merged_balanced/{train,val,test}.json`` joined with VisualNews ``origin/data.json``.

A NewsCLIPpings annotation names a caption and an image by their VisualNews ids (``id`` and
``image_id``) and says whether the pair is ``falsified``; the caption text and the image path come
from VisualNews, whose ``image_path`` is relative to the folder of its ``data.json``.
"""

from __future__ import annotations

import json
from pathlib import Path

from m3d_agents.datasets.base import dataset, ImageResolver, LoadedDataset, LoaderOptions, Row, Skips, make_sample, read_text_file, require_file
from m3d_agents.errors import InputError
from m3d_agents.safe_json import loads_bounded

TAXONOMY = "ooc"


class Options(LoaderOptions):
    visualnews: Path
    image_root: Path | None = None


def _visualnews_index(path: Path) -> dict[str, dict[str, object]]:
    try:
        records = loads_bounded(read_text_file(require_file(path, "VisualNews data.json")))
    except json.JSONDecodeError as exc:
        raise InputError(path.name, f"not valid JSON at line {exc.lineno}: {exc.msg}") from exc
    except ValueError as exc:
        raise InputError(path.name, f"refused: {exc}") from None
    if not isinstance(records, list):
        raise InputError(path.name, "expected a JSON array of VisualNews records")
    return {str(r["id"]): r for r in records if isinstance(r, dict) and "id" in r}


@dataset("newsclippings", "NewsCLIPpings merged_balanced JSON; needs visualnews=data.json", Options)
def load(path: Path, options: Options) -> LoadedDataset:
    skips = Skips()
    visualnews = _visualnews_index(options.visualnews)
    images = ImageResolver(options.image_root or options.visualnews.parent, options.missing_images, skips,
                           options.images_outside_root)
    try:
        document = loads_bounded(read_text_file(require_file(path, "NewsCLIPpings annotations")))
    except json.JSONDecodeError as exc:
        raise InputError(path.name, f"not valid JSON at line {exc.lineno}: {exc.msg}") from exc
    except ValueError as exc:
        raise InputError(path.name, f"refused: {exc}") from None
    annotations = document.get("annotations") if isinstance(document, dict) else None
    if not isinstance(annotations, list):
        raise InputError(f"{path.name}.annotations", "missing; expected the merged_balanced format")
    samples = []
    for i, item in enumerate(annotations):
        row = Row(f"{path.name}.annotations[{i}]", item)
        caption_id, image_id = str(row.require("id")), str(row.require("image_id"))
        falsified = row.require("falsified")
        if not isinstance(falsified, bool):
            raise InputError(row.field("falsified"), f"expected true or false, got {falsified!r}")
        caption_record, image_record = visualnews.get(caption_id), visualnews.get(image_id)
        if caption_record is None or image_record is None:
            missing = caption_id if caption_record is None else image_id
            raise InputError(row.field("id" if caption_record is None else "image_id"),
                             f"VisualNews id {missing} is not in {options.visualnews}")
        image = images.resolve(str(image_record["image_path"]), row, "image_id")
        if image is None:
            continue
        sample = make_sample(
            row, skips, id=f"{caption_id}-{image_id}", text=str(caption_record.get("caption", "")), images=[image],
            gold_label="falsified" if falsified else "pristine", taxonomy=TAXONOMY, metadata={"images_authentic": True},
        )
        if sample is not None:
            samples.append(sample)
    return LoadedDataset.build("newsclippings", path, options, samples, skips, TAXONOMY)
