"""ClaimReview2024+ (CR+), DEFAME's benchmark, which AgentFact scores in Table III (paper lines 280, 311-313).

**Access.** CR+ is published on the Hugging Face Hub (``MAI-Lab/ClaimReview2024plus``) behind a
gate: its images are copyrighted, so the files are given to researchers, educators and students
who accept non-commercial terms. Nothing is downloaded here and no copy ships with the project;
a user who has been granted access downloads the data set and points the loader at its JSON file:
``--dataset claimreview2024:ClaimReview2024plus/test.json``.

**Format.** One JSON array of 300 claims from fact-check articles published from November 2023 on,
140 of them with an image: ``text`` (the claim), ``image`` (a list of image paths, empty for
text-only claims), ``label`` (``supported``, ``refuted``, ``misleading``, ``not enough
information``), ``date`` (``2024-01-31T00:00:00Z``) and ``author``. DEFAME's earlier release names
the image list ``claimImage`` and the date ``claimDate``; both spellings are read. Image paths are
resolved under ``image_root`` (default: the file's folder), dropping leading folders as needed.

**Labels.** AgentFact scores CR+ with three classes (true, false, unproven; Table III's
"Fact-Check" task) on "the full available test set", so every claim is kept: ``supported`` is true,
``refuted`` false, ``not enough information`` unproven. The paper does not say where its
``misleading`` claims went; ``misleading: false`` (the default) scores them as false, as a
fact-checker's "misleading" rating denies the claim as stated; ``mixture`` keeps them apart (the
factcheck taxonomy's mixture label, as RW-Post's mixed ratings) and ``skip`` leaves them out, counted.

The claim's ``date`` is the sample's claim date, which the leakage filter's date rule reads.
"""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from m3d_agents.datasets.base import ImageResolver, LoadedDataset, LoaderOptions, Row, Skips, dataset, make_sample, map_label, read_records
from m3d_agents.errors import InputError
from m3d_agents.sample import SampleMetadata

TAXONOMY = "factcheck"
LABELS: dict[str, str | None] = {"supported": "true", "refuted": "false", "not enough information": "unproven", "misleading": "false"}


class Options(LoaderOptions):
    image_root: Path | None = Field(None, description="where the image paths start; None: the JSON file's folder")
    with_images: bool = Field(True, description="attach each claim's image (140 of the 300 claims have one)")
    misleading: Literal["false", "mixture", "skip"] = Field(
        "false", description="where claims rated misleading go: false (the default), mixture, or skip (counted)"
    )


def claim_date(row: Row) -> date | None:
    raw = row.data.get("date", row.data.get("claimDate"))
    if not raw:
        return None
    try:
        return datetime.fromisoformat(str(raw).strip().replace("Z", "+00:00")).date()
    except ValueError as exc:
        raise InputError(row.field("date"), f"not an ISO date such as 2024-01-31T00:00:00Z: {raw!r}") from exc


def images_of(row: Row) -> tuple[list[str], str]:
    name = "image" if "image" in row.data else "claimImage"
    raw: Any = row.data.get(name)
    if raw in (None, "", []):
        return [], name
    return [str(item) for item in (raw if isinstance(raw, list) else [raw])], name


@dataset("claimreview2024", "ClaimReview2024+ (DEFAME's CR+, gated on the Hugging Face Hub) JSON, fact-check ratings", Options)
def load(path: Path, options: Options) -> LoadedDataset:
    skips = Skips()
    labels = {**LABELS, "misleading": None if options.misleading == "skip" else options.misleading}
    images = ImageResolver(options.image_root or path.parent, options.missing_images, skips)
    samples = []
    for index, row in enumerate(read_records(path)):
        label = map_label(row, "label", row.require("label"), labels, skips)
        if label is None:
            continue
        references, field_name = images_of(row) if options.with_images else ([], "image")
        paths = images.resolve_all(references, row, field_name)
        if paths is None:
            continue
        sample = make_sample(
            row, skips, id=f"claimreview2024-{index}", text=row.text("text"), images=paths, gold_label=label,
            taxonomy=TAXONOMY, metadata=SampleMetadata(claim_date=claim_date(row), language="en"),
        )
        if sample is not None:
            samples.append(sample)
    return LoadedDataset.build("claimreview2024", path, options, samples, skips, TAXONOMY)
