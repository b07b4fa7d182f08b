"""MR2 ``dataset_items_{train,val,test}.json``: an object of items keyed by id.

Each item has ``caption``, ``image_path`` (relative to ``queries_dataset/merge``) and ``label``:
0 non-rumor, 1 rumor, 2 unverified. Rumors are posts that a rumor-debunking service found false;
non-rumors come from verified news accounts; unverified posts were never checked either way.

* On the ``binary`` taxonomy (the default), non-rumor is real and rumor is fake. Unverified has
  no honest place there (it is neither shown real nor shown fake): such items are skipped and
  counted.
* On the ``factcheck`` taxonomy, non-rumor is true, rumor is false and unverified is unproven.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from m3d_agents.datasets.base import dataset, ImageResolver, LoadedDataset, LoaderOptions, Skips, make_sample, map_label, read_records
from m3d_agents.language import LanguageFilter

MAPS: dict[str, dict[str, str | None]] = {
    "binary": {"0": "real", "1": "fake", "2": None},
    "factcheck": {"0": "true", "1": "false", "2": "unproven"},
}


class Options(LoaderOptions):
    taxonomy: Literal["binary", "factcheck"] = "binary"
    image_root: Path | None = None
    language: str | None = None


@dataset("mr2", "MR2 dataset_items_*.json (binary or factcheck)", Options)
def load(path: Path, options: Options) -> LoadedDataset:
    skips = Skips()
    images = ImageResolver(options.image_root or path.parent / "queries_dataset" / "merge", options.missing_images, skips,
                           options.images_outside_root)
    languages = LanguageFilter(options.language)
    samples = []
    for row in read_records(path):
        label = map_label(row, "label", row.require("label"), MAPS[options.taxonomy], skips)
        if label is None:
            continue
        caption = row.text("caption")
        keep, language = languages.check(caption, skips)
        if not keep:
            continue
        image = images.resolve(row.text("image_path"), row, "image_path")
        if image is None:
            continue
        sample = make_sample(
            row, skips, id=f"mr2-{row.data.get('__key__', '')}", text=caption, images=[image], gold_label=label,
            taxonomy=options.taxonomy, metadata={"language": language},
        )
        if sample is not None:
            samples.append(sample)
    return LoadedDataset.build("mr2", path, options, samples, skips, options.taxonomy)
