"""AMG ``dataset/{train,val,test}.json``: pretty-printed JSON objects one after another.

Each object has ``Id``, ``content`` (the post text), ``label`` (``"0"`` to ``"5"``) and
``create_time`` (a Unix timestamp). The media are downloaded separately; an image is looked up
as ``<image_root>/<Id>.<ext>``.

The numeric label order (an assumption, made configurable with ``label_order``): the release
does not document what ``"0"`` to ``"5"`` mean, so the default follows the order in which the AMG
paper and the T2Agent paper (AAAI 2026) list the classes after real: 0 real,
1 image fabrication (ImageFab), 2 non-evidential image (ImageNoE), 3 entity inconsistency
(EntityInc), 4 event inconsistency (EventInc), 5 time inconsistency (TimeInc). The T2Agent paper
gives the test split's counts per class as 575 / 74 / 69 / 29 / 136 / 90 in that order;
``tests/m3d_agents/datasets/test_amg_order.py`` checks a real ``test.json`` against them when
``AMG_TEST_JSON`` points at one.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from m3d_agents.datasets.base import dataset, LoadedDataset, LoaderOptions, Skips, find_image, make_sample, map_label, read_records
from m3d_agents.errors import InputError
from m3d_agents.labels import get_taxonomy
from m3d_agents.sample import SampleMetadata

TAXONOMY = "amg"
DEFAULT_ORDER = "real,image_fabrication,non_evidential_image,entity_inconsistency,event_inconsistency,time_inconsistency"


class Options(LoaderOptions):
    image_root: Path | None = None
    label_order: str = DEFAULT_ORDER


@dataset("amg", "AMG JSON (real plus five forgery types)", Options)
def load(path: Path, options: Options) -> LoadedDataset:
    skips = Skips()
    taxonomy = get_taxonomy(TAXONOMY)
    order = [taxonomy.normalise(name) for name in options.label_order.split(",")]
    if sorted(order) != sorted(taxonomy.labels):
        raise InputError("dataset option label_order", f"must list each AMG label once: {', '.join(taxonomy.labels)}")
    labels: dict[str, str | None] = {str(i): name for i, name in enumerate(order)}
    samples = []
    for row in read_records(path):
        label = map_label(row, "label", row.require("label"), labels, skips)
        if label is None:
            continue
        native = row.text("Id")
        images = []
        if options.image_root is not None:
            image = find_image(options.image_root, native)
            if image is None:
                if options.missing_images == "error":
                    raise InputError(row.field("Id"), f"no image named {native}.<ext> in {options.image_root}")
                skips.add("image file not found (Id)")
                continue
            images.append(image)
        claim_date = None
        if row.data.get("create_time") is not None:
            claim_date = datetime.fromtimestamp(float(row.data["create_time"]), tz=timezone.utc).date()
        sample = make_sample(row, skips, id=f"amg-{native}", text=row.text("content"), images=images,
                             gold_label=label, taxonomy=TAXONOMY, metadata=SampleMetadata(claim_date=claim_date))
        if sample is not None:
            samples.append(sample)
    return LoadedDataset.build("amg", path, options, samples, skips, TAXONOMY)
