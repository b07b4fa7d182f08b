"""What every dataset loader shares: options, counted skips, row references and file lookups.

Loaders turn a benchmark's own files into :class:`Sample` objects with a gold label from one of
our taxonomies. Two kinds of trouble are kept apart on purpose:

* a row that cannot be right (an unknown label, a missing required field, an image the download
  should have had) raises :class:`InputError` naming the file, the row and the field, because
  evaluating quietly on a subset would mislead;
* a row that is fine but has no place in the chosen task (a label with no honest mapping, a post
  in another language) is skipped and counted with its reason, and the report shows the counts.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from m3d_agents.errors import InputError
from m3d_agents.evidence import Evidence
from m3d_agents.registry import Registry
from m3d_agents.safe_json import JsonTooDeep, check_depth, loads_bounded
from m3d_agents.sample import Sample

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".gif", ".webp", ".bmp", ".tif", ".tiff")


class LoaderOptions(BaseModel):
    """Options common to every loader; each loader extends this with its own."""

    model_config = ConfigDict(extra="forbid")

    missing_images: Literal["error", "skip"] = "error"
    images_outside_root: bool = Field(
        False, description="allow rows to name images outside the data set's image folder (absolute paths, ../, "
        "links out of it); off, such a row is an error, so a data set file cannot make a run read and send any file",
    )


@dataclass
class Skips:
    """Rows left out, counted by reason."""

    counts: Counter[str] = field(default_factory=Counter)

    def add(self, reason: str) -> None:
        self.counts[reason] += 1

    def as_dict(self) -> dict[str, int]:
        return dict(self.counts.most_common())


class LoadReport(BaseModel):
    kind: str
    path: str
    options: dict[str, Any]
    loaded: int
    skipped: dict[str, int]
    taxonomy: str
    labels: dict[str, int] = Field(default_factory=dict, description="loaded samples per gold label")

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())


@dataclass
class LoadedDataset:
    samples: list[Sample]
    report: LoadReport
    gold_evidence: dict[str, list[Evidence]] = field(default_factory=dict)
    """Sample id -> the data set's own evidence for it, where the data set ships some. Kept apart from
    the samples because it usually states the verdict: only an evidence-bounded setting may read it."""

    @classmethod
    def build(
        cls, kind: str, path: Path, options: LoaderOptions, samples: list[Sample], skips: Skips, taxonomy: str,
        gold_evidence: dict[str, list[Evidence]] | None = None,
    ) -> "LoadedDataset":
        labels = Counter(s.gold_label for s in samples if s.gold_label is not None)
        report = LoadReport(
            kind=kind, path=str(path), options=options.model_dump(mode="json", exclude_defaults=True),
            loaded=len(samples), skipped=skips.as_dict(), taxonomy=taxonomy, labels=dict(labels.most_common()),
        )
        return cls(samples=samples, report=report, gold_evidence=dict(gold_evidence or {}))


@dataclass(frozen=True)
class Row:
    """One record of a dataset file and where it came from, for error messages."""

    ref: str
    data: dict[str, Any]

    def field(self, name: str) -> str:
        return f"{self.ref}.{name}"

    def require(self, name: str) -> Any:
        if name not in self.data or self.data[name] is None:
            raise InputError(self.field(name), "missing; the file does not look like the expected format")
        return self.data[name]

    def text(self, name: str, default: str | None = None) -> str:
        """The text in field ``name``; a number is written out, but a list, an object or a boolean is
        not text, and saying so beats sending ``['a', 'b']`` or ``True`` to a model as the post."""
        value = self.data.get(name, default) if default is not None else self.require(name)
        if value is None:
            return ""
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise InputError(self.field(name), f"is a {type(value).__name__}, not text")
        return str(value)


def parse_options(model: type[LoaderOptions], raw: dict[str, str], kind: str) -> LoaderOptions:
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        name = ".".join(str(p) for p in first["loc"]) or "option"
        known = ", ".join(model.model_fields)
        raise InputError(f"dataset option {name}", f"{first['msg']} (options of {kind}: {known})") from exc


def require_file(path: Path, what: str) -> Path:
    if not path.exists():
        raise InputError("dataset", f"{what} {path} does not exist")
    if not path.is_file():
        raise InputError("dataset", f"{what} {path} is not a file")
    return path


def read_records(path: Path) -> Iterator[Row]:
    """Rows of a JSON array, a JSON object of objects (keyed by id), JSON Lines, or concatenated objects.

    Benchmarks ship all four: MMFakeBench an array, MR2 an object keyed by id, FakeSV and RW-Post
    JSON Lines, AMG pretty-printed objects one after another.
    """
    text = read_text_file(require_file(path, "dataset file"))
    stripped = text.lstrip()
    if not stripped:
        raise InputError("dataset", f"{path} is empty")
    if stripped[0] == "[":
        try:
            data = loads_bounded(text)
        except JsonTooDeep as exc:
            raise InputError(f"{path.name}", f"refused: {exc}") from None
        except json.JSONDecodeError as exc:
            raise InputError(f"{path.name}", f"not valid JSON at line {exc.lineno}: {exc.msg}") from exc
        if not isinstance(data, list):
            raise InputError(f"{path.name}", "not valid JSON: a list that does not close")
        for i, item in enumerate(data):
            yield Row(f"{path.name}[{i}]", _as_object(item, f"{path.name}[{i}]"))
        return
    decoder = json.JSONDecoder()
    position, line_of = 0, _line_counter(text)
    objects: list[tuple[int, Any]] = []
    while True:
        while position < len(text) and text[position].isspace():
            position += 1
        if position >= len(text):
            break
        try:
            value, end = decoder.raw_decode(text, position)
            check_depth(value)
        except (JsonTooDeep, RecursionError):
            raise InputError(f"{path.name}:{line_of(position)}", f"refused: {JsonTooDeep()}") from None
        except json.JSONDecodeError as exc:
            raise InputError(f"{path.name}:{line_of(position)}", f"not valid JSON: {exc.msg}") from exc
        objects.append((line_of(position), value))
        position = end
    if len(objects) == 1 and isinstance(objects[0][1], dict) and objects[0][1] and all(
        isinstance(v, dict) for v in objects[0][1].values()
    ):
        for key, item in objects[0][1].items():
            yield Row(f"{path.name}[{key!r}]", {"__key__": key, **item})
        return
    for line, item in objects:
        yield Row(f"{path.name}:{line}", _as_object(item, f"{path.name}:{line}"))


def _as_object(item: Any, ref: str) -> dict[str, Any]:
    if not isinstance(item, dict):
        raise InputError(ref, f"expected a JSON object, got {type(item).__name__}")
    return item


def _line_counter(text: str) -> Callable[[int], int]:
    starts = [0]
    for i, char in enumerate(text):
        if char == "\n":
            starts.append(i + 1)

    def line_of(position: int) -> int:
        import bisect

        return bisect.bisect_right(starts, position)

    return line_of


CSV_FIELD_LIMIT = 1 << 20
"""The longest CSV field read, in characters: far above any post, and a bound on one row's memory."""


def read_csv_rows(path: Path, delimiter: str = ",", quoting: int = csv.QUOTE_MINIMAL) -> Iterator[Row]:
    """CSV rows as dicts; row references count the header as line 1. A field over :data:`CSV_FIELD_LIMIT`,
    a NUL byte or text that is not UTF-8 is an error naming the line."""
    text = read_text_file(require_file(path, "dataset file"))
    previous = csv.field_size_limit(CSV_FIELD_LIMIT)
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter, quoting=quoting)  # type: ignore[call-overload]
        try:
            if not reader.fieldnames:
                raise InputError("dataset", f"{path} has no header row")
            for row in reader:
                yield Row(f"{path.name}:{reader.line_num}", {k: v for k, v in row.items() if k is not None})
        except csv.Error as exc:
            problem = str(exc)
            if "field larger than field limit" in problem:
                problem = f"a field is longer than {CSV_FIELD_LIMIT} characters"
            raise InputError(f"{path.name}:{reader.line_num + 1}", f"not a readable CSV row: {problem}") from None
    finally:
        csv.field_size_limit(previous)


def read_text_file(path: Path) -> str:
    """A data set file's text, which must be UTF-8 (a BOM is allowed); anything else is one line naming the file."""
    data = path.read_bytes()
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        raise InputError(path.name, "is UTF-16 text; save it as UTF-8")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise InputError(f"{path.name}:{line}", f"is not UTF-8 text (byte {exc.start}); save the file as UTF-8") from None


def find_image(folder: Path, stem: str) -> Path | None:
    """A file named ``stem`` with any usual image suffix inside ``folder``, or None (a stem that leads
    out of the folder, with ``../`` or a link, finds nothing)."""
    for suffix in IMAGE_SUFFIXES:
        for candidate in (folder / f"{stem}{suffix}", folder / f"{stem}{suffix.upper()}"):
            if candidate.is_file() and inside(candidate, folder):
                return candidate
    return None


def inside(path: Path, root: Path) -> bool:
    """Whether ``path``, links and ``..`` resolved, lies within ``root``."""
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):
        return False


class ImageResolver:
    """Turns a dataset's image reference into a path, applying the ``missing_images`` policy."""

    def __init__(self, root: Path, policy: Literal["error", "skip"], skips: Skips, outside_root: bool = False) -> None:
        self.root = root
        self.policy = policy
        self.skips = skips
        self.outside_root = outside_root

    def resolve(self, reference: str, row: Row, field_name: str) -> Path | None:
        """The image path, or None when it is missing and the policy is to skip (counted).

        Datasets root their paths differently (MMFakeBench writes ``/fake/...`` relative to the split
        folder, RW-Post starts at its repository root), so the reference is tried as given, under
        the root, and with leading folders dropped one by one.
        """
        relative = Path(reference.lstrip("/").removeprefix("./"))
        candidates = [Path(reference)] if Path(reference).is_absolute() else []
        candidates.append(self.root / relative)
        parts = relative.parts
        candidates += [self.root.joinpath(*parts[i:]) for i in range(1, len(parts))]
        for candidate in candidates:
            if candidate.is_file():
                if not self.outside_root and not inside(candidate, self.root):
                    raise InputError(
                        row.field(field_name),
                        f"image {reference!r} lies outside the data set's image folder {self.root}; a data set file "
                        "may only name its own images (pass images_outside_root=true to allow others)",
                    )
                return candidate
        if self.policy == "skip":
            self.skips.add(f"image file not found ({field_name})")
            return None
        raise InputError(
            row.field(field_name),
            f"image {reference!r} not found under {self.root}; download the images, point image_root at them,"
            " or pass missing_images=skip to count such rows and leave them out",
        )


    def resolve_all(self, references: list[str], row: Row, field_name: str) -> list[Path] | None:
        """Every image of a row, or None when one is missing and the policy is to skip the row."""
        paths = []
        for k, reference in enumerate(references):
            image = self.resolve(reference, row, f"{field_name}[{k}]" if len(references) > 1 else field_name)
            if image is None:
                return None
            paths.append(image)
        return paths


def make_sample(row: Row, skips: Skips, **fields: Any) -> Sample | None:
    """Build a Sample; an empty text is a counted skip, any other invalid field an error naming the row."""
    text = str(fields.get("text") or "")
    if not text.strip():
        skips.add("empty text")
        return None
    try:
        return Sample(**fields)
    except ValidationError as exc:
        first = exc.errors()[0]
        name = ".".join(str(p) for p in first["loc"]) or "sample"
        raise InputError(row.field(name), first["msg"]) from exc


def map_label(row: Row, field_name: str, raw: Any, mapping: dict[str, str | None], skips: Skips) -> str | None:
    """Look ``raw`` up in an explicit map; None in the map means 'no honest mapping: skip, counted'.

    A value absent from the map is an error: it means the file is not the format we think it is.
    """
    key = str(raw).strip()
    lookup = {k.lower(): v for k, v in mapping.items()}
    if key.lower() not in lookup:
        raise InputError(row.field(field_name), f"unknown label {key!r}; expected one of {', '.join(mapping)}")
    mapped = lookup[key.lower()]
    if mapped is None:
        skips.add(f"label {key!r} has no mapping onto the chosen taxonomy")
    return mapped



LoadFunction = Callable[[Path, Any], LoadedDataset]


@dataclass(frozen=True)
class DatasetKind:
    """A data set format: its loader and the options the loader takes (``-o key=value``)."""

    name: str
    summary: str
    options: type[LoaderOptions]
    load: LoadFunction


DATASETS: Registry[DatasetKind] = Registry("dataset kind", field="dataset")
"""Every data set format by the KIND of ``KIND:PATH``; the built-in loaders register when
:mod:`m3d_agents.datasets` is imported."""


def dataset(name: str, summary: str, options: type[LoaderOptions]) -> Callable[[LoadFunction], LoadFunction]:
    """Register a loader function under ``name`` (stack the decorator for aliases)."""

    def decorate(load: LoadFunction) -> LoadFunction:
        DATASETS.add(name, DatasetKind(name, summary, options, load), summary)
        return load

    return decorate
