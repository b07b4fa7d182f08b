"""Any JSON Lines, JSON or CSV/TSV file, given which column holds what.

``text`` names the text column (required). ``label`` names the gold label column; its values must
be labels of ``taxonomy`` unless ``label_map`` maps them (``src=dst,src2=dst2``; a ``dst`` of
``skip`` leaves such rows out, counted). ``images`` names a column of image paths separated by
``image_separator`` (or a JSON list), relative to ``image_root`` (default: the file's folder).
"""

from __future__ import annotations

from pathlib import Path

from m3d_agents.datasets.base import (
    dataset,
    ImageResolver,
    LoadedDataset,
    LoaderOptions,
    Row,
    Skips,
    make_sample,
    map_label,
    read_csv_rows,
    read_records,
)
from m3d_agents.errors import InputError
from m3d_agents.labels import get_taxonomy


class Options(LoaderOptions):
    text: str
    label: str | None = None
    id: str | None = None
    images: str | None = None
    image_separator: str = ";"
    image_root: Path | None = None
    taxonomy: str = "binary"
    label_map: str | None = None
    claim_date: str | None = None
    language: str | None = None
    source_url: str | None = None


def _rows(path: Path) -> list[Row]:
    suffix = path.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return list(read_csv_rows(path, delimiter="\t" if suffix == ".tsv" else ","))
    if suffix in (".jsonl", ".json", ".ndjson"):
        return list(read_records(path))
    raise InputError("dataset", f"cannot tell the format of {path.name}; use .jsonl, .json, .csv or .tsv")


def _label_map(options: Options) -> dict[str, str | None]:
    taxonomy = get_taxonomy(options.taxonomy)
    if not options.label_map:
        return {label: label for label in taxonomy.labels}
    mapping: dict[str, str | None] = {}
    for pair in options.label_map.split(","):
        source, sep, target = pair.partition("=")
        if not sep:
            raise InputError("dataset option label_map", f"{pair!r} is not of the form source=target")
        target = target.strip()
        try:
            mapping[source.strip()] = None if target == "skip" else taxonomy.normalise(target)
        except ValueError as exc:
            raise InputError("dataset option label_map", str(exc)) from exc
    return mapping


def _image_list(value: object, separator: str) -> list[str]:
    if value in (None, ""):
        return []
    if isinstance(value, list):
        return [str(v) for v in value]
    return [part.strip() for part in str(value).split(separator) if part.strip()]


@dataset("jsonl", "any JSON Lines / JSON file with a column mapping (text=..., label=...)", Options)
@dataset("csv", "any CSV / TSV file with a column mapping (text=..., label=...)", Options)
def load(path: Path, options: Options) -> LoadedDataset:
    skips = Skips()
    labels = _label_map(options)
    images = ImageResolver(options.image_root or path.parent, options.missing_images, skips,
                           options.images_outside_root)
    samples = []
    for index, row in enumerate(_rows(path)):
        gold = None
        if options.label is not None:
            gold = map_label(row, options.label, row.require(options.label), labels, skips)
            if gold is None:
                continue
        references = _image_list(row.data.get(options.images), options.image_separator) if options.images else []
        paths = images.resolve_all(references, row, options.images or "images")
        if paths is None:
            continue
        metadata = {
            key: row.data.get(column) or None
            for key, column in (("claim_date", options.claim_date), ("language", options.language),
                                ("source_url", options.source_url))
            if column is not None
        }
        sample = make_sample(
            row, skips, id=str(row.require(options.id)) if options.id else f"row-{index}",
            text=row.text(options.text), images=paths, gold_label=gold, taxonomy=options.taxonomy,
            metadata=metadata,
        )
        if sample is not None:
            samples.append(sample)
    return LoadedDataset.build("generic", path, options, samples, skips, options.taxonomy)
