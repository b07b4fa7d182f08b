"""VERITE ``VERITE.csv``: ``caption``, ``image_path`` (relative to the VERITE folder) and ``label``.

The labels are ``true``, ``miscaptioned`` and ``out-of-context``. On the out-of-context taxonomy a
true pair is pristine; both a miscaptioned and an out-of-context pair are falsified, because in
each the caption misrepresents what the image shows.
"""

from __future__ import annotations

from pathlib import Path

from m3d_agents.datasets.base import dataset, ImageResolver, LoadedDataset, LoaderOptions, Skips, make_sample, map_label, read_csv_rows

TAXONOMY = "ooc"
LABELS: dict[str, str | None] = {"true": "pristine", "miscaptioned": "falsified", "out-of-context": "falsified"}


class Options(LoaderOptions):
    image_root: Path | None = None


@dataset("verite", "VERITE.csv (true / miscaptioned / out-of-context)", Options)
def load(path: Path, options: Options) -> LoadedDataset:
    skips = Skips()
    images = ImageResolver(options.image_root or path.parent, options.missing_images, skips,
                           options.images_outside_root)
    samples = []
    for index, row in enumerate(read_csv_rows(path)):
        label = map_label(row, "label", row.require("label"), LABELS, skips)
        if label is None:
            continue
        image = images.resolve(row.text("image_path"), row, "image_path")
        if image is None:
            continue
        native = row.data.get("id") or row.data.get("") or str(index)
        sample = make_sample(row, skips, id=f"verite-{native}", text=row.text("caption"), images=[image],
                             gold_label=label, taxonomy=TAXONOMY, metadata={"images_authentic": True})
        if sample is not None:
            samples.append(sample)
    return LoadedDataset.build("verite", path, options, samples, skips, TAXONOMY)
