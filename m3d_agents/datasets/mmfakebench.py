"""MMFakeBench: ``MMFakeBench_{val,test}/source/MMFakeBench_{val,test}.json``.

Each record has ``text``, ``image_path`` (rooted at the split folder, e.g. ``/fake/...png``),
``gt_answers`` (``True``/``Fake``) and ``fake_cls``. ``fake_cls`` carries the four-way label; the
release spells the cross-modal class ``mismatch``.
"""

from __future__ import annotations

from pathlib import Path

from m3d_agents.datasets.base import dataset, ImageResolver, LoadedDataset, LoaderOptions, Skips, make_sample, map_label, read_records

TAXONOMY = "m3d"
LABELS: dict[str, str | None] = {
    "original": "original",
    "textual_veracity_distortion": "textual_veracity_distortion",
    "visual_veracity_distortion": "visual_veracity_distortion",
    "mismatch": "cross_modal_consistency_distortion",
    "cross_modal_consistency_distortion": "cross_modal_consistency_distortion",
}


class Options(LoaderOptions):
    image_root: Path | None = None


def default_image_root(path: Path) -> Path:
    """The split folder: the JSON sits in ``<split>/source/``, the images in ``<split>/{real,fake}/``."""
    return path.parent.parent if path.parent.name == "source" else path.parent


@dataset("mmfakebench", "MMFakeBench JSON (four-way m3d labels)", Options)
def load(path: Path, options: Options) -> LoadedDataset:
    skips = Skips()
    images = ImageResolver(options.image_root or default_image_root(path), options.missing_images, skips,
                           options.images_outside_root)
    samples = []
    for index, row in enumerate(read_records(path)):
        label = map_label(row, "fake_cls", row.require("fake_cls"), LABELS, skips)
        if label is None:
            continue
        image = images.resolve(str(row.require("image_path")), row, "image_path")
        if image is None:
            continue
        sample = make_sample(
            row, skips, id=str(row.data.get("id", f"mmfb-{index}")), text=row.text("text"), images=[image],
            gold_label=label, taxonomy=TAXONOMY,
        )
        if sample is not None:
            samples.append(sample)
    return LoadedDataset.build("mmfakebench", path, options, samples, skips, TAXONOMY)
