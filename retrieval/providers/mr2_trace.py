"""Replay of a retrieval trace recorded in MR2's format, so the whole pipeline runs offline on real data.

An MR2 folder holds ``dataset_items_*.json`` (caption, image, label per claim) and, under
``queries_dataset/merge``, for each claim:

- ``<inv_path>/inverse_annotation.json``: reverse image search (Google Vision web detection):
  entities, best-guess label, fully and partially matching pages, with saved HTML;
- ``<direct_path>/direct_annotation.json``: pages found by searching the caption, with saved HTML.

The reverse search is looked up by the image's content hash and the caption search by the exact
caption, just as a live provider would be queried; anything not in the trace is an error that
names what was missing. Saved HTML paths in the annotations point into the original crawl layout,
so each is resolved by file name inside the claim's folder.

A trace is data from outside, read like a data set: every path it names (a claim's image, its folders,
a saved page) must resolve, links and ``..`` included, inside the trace's own folder, or the claim is
refused with its id named (a trace cannot make a run read, and send to a model, any other file); its
JSON is read with bounded nesting and checked to be the objects and lists it should be, so a damaged
or hostile file ends in one line naming the file and the problem.
"""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel, ValidationError

from m3d_agents.errors import InputError
from m3d_agents.safe_json import JsonTooDeep, loads_bounded
from m3d_agents.sample import Sample
from retrieval.providers.base import ImageQuery, MatchKind, ReverseImageResult, SearchHit

MR2_LABELS = {0: "true", 1: "false", 2: "unproven"}
"""MR2's non-rumor / rumor / unverified, in the fact-check taxonomy."""

_INVERSE_GROUPS: tuple[tuple[str, MatchKind], ...] = (
    ("all_fully_matched_captions", "full"),
    ("fully_matched_no_text", "full"),
    ("all_partially_matched_captions", "partial"),
    ("partially_matched_no_text", "partial"),
)
_DIRECT_GROUPS = ("images_with_captions", "images_with_caption_matched_tags", "images_with_no_captions")
MAX_TRACE_FILE_BYTES = 64 * 1024 * 1024
"""An MR2 items or annotation file is a few megabytes at most; a larger one is refused, not read."""


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "text", bool: "a boolean", type(None): "null"}.get(type(value), "a number")


def read_trace_json(path: Path) -> Any:
    """The JSON of a trace file, or one :class:`InputError` naming the file: too large, not UTF-8, not JSON, too deep."""
    try:
        size = path.stat().st_size
        if size > MAX_TRACE_FILE_BYTES:
            raise InputError(str(path), f"holds {size} bytes, over the limit of {MAX_TRACE_FILE_BYTES} for a trace file")
        return loads_bounded(path.read_bytes().decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise InputError(str(path), f"is not UTF-8 text (byte {exc.start})") from None
    except JsonTooDeep as exc:
        raise InputError(str(path), f"refused: {exc}") from None
    except json.JSONDecodeError as exc:
        raise InputError(str(path), f"not valid JSON: {exc}") from None
    except OSError as exc:
        raise InputError(str(path), f"cannot be read: {exc.strerror or exc}") from None


class MR2Item(BaseModel):
    id: str
    caption: str
    label: int | None = None
    image_path: str
    direct_path: str
    inv_path: str


class MR2Trace:
    """One MR2 folder: its claims as Samples, and its recorded searches as providers."""

    def __init__(self, root: Path, items_file: str = "dataset_items_test.json") -> None:
        self.root = Path(root)
        self.merge = self.root / "queries_dataset" / "merge"
        self.items_path = self.root / items_file
        if not self.items_path.is_file():
            raise InputError("replay_mr2", f"{self.items_path} does not exist; expected an MR2 folder with {items_file}")
        try:
            self._real_root = self.root.resolve()
        except (OSError, RuntimeError) as exc:
            raise InputError("replay_mr2", f"{self.root} cannot be resolved: {exc}") from None
        self._inside(self.items_path, f"the items file {items_file}")
        raw = read_trace_json(self.items_path)
        if not isinstance(raw, dict):
            raise InputError(str(self.items_path), f"is {_kind(raw)}, not an object of claims by id")
        self.items = {}
        for key, value in raw.items():
            if not isinstance(value, dict):
                raise InputError(f"{self.items_path}: item {key!r}", f"is {_kind(value)}, not an object")
            try:
                self.items[key] = MR2Item.model_validate({**value, "id": key})
            except ValidationError as exc:
                raise InputError(f"{self.items_path}: item {key!r}", InputError.from_validation(exc).args[0]) from None

    def _inside(self, path: Path, what: str, item: MR2Item | None = None) -> Path:
        """``path``, if it resolves (links and ``..`` followed) inside the trace's folder; else an error naming the claim."""
        try:
            real = path.resolve()
        except (OSError, RuntimeError):
            real = None
        if real is None or not real.is_relative_to(self._real_root):
            where = f"{self.items_path.name}: item {item.id!r}" if item is not None else "replay_mr2"
            raise InputError(where, f"{what} {path} lies outside the trace folder {self.root}; a trace may only name its "
                                    "own files")
        return path

    def ids(self) -> list[str]:
        return list(self.items)

    def item(self, sample_id: str) -> MR2Item:
        if sample_id not in self.items:
            raise InputError("sample_id", f"{sample_id!r} is not in the MR2 trace; known: {', '.join(self.items)}")
        return self.items[sample_id]

    def sample(self, sample_id: str) -> Sample:
        item = self.item(sample_id)
        label = MR2_LABELS.get(item.label) if item.label is not None else None
        image = self._inside(self.merge / item.image_path, "its image", item)
        return Sample(id=item.id, text=item.caption, images=[image], gold_label=label, taxonomy="factcheck")

    def samples(self) -> list[Sample]:
        return [self.sample(key) for key in self.items]

    @cached_property
    def _by_image_hash(self) -> dict[str, MR2Item]:
        table = {}
        for item in self.items.values():
            path = self.merge / item.image_path
            try:
                self._inside(path, "its image", item)
            except InputError:
                continue  # never read; refused with the claim's id if the claim is asked for
            if path.is_file():
                table[hashlib.sha256(path.read_bytes()).hexdigest()] = item
        return table

    @cached_property
    def _by_caption(self) -> dict[str, MR2Item]:
        return {item.caption.strip(): item for item in self.items.values()}

    def reverse_search(self) -> "MR2ReverseSearch":
        return MR2ReverseSearch(self)

    def caption_search(self) -> "MR2CaptionSearch":
        return MR2CaptionSearch(self)

    def _annotation(self, item: MR2Item, folder: str, name: str) -> dict[str, Any]:
        path = self._inside(self.merge / folder / name, f"its {name}", item)
        if not path.is_file():
            raise InputError("replay_mr2", f"the trace has no {name} in {self.merge / folder}")
        data = read_trace_json(path)
        if not isinstance(data, dict):
            raise InputError(str(path), f"is {_kind(data)}, not an object")
        return data

    def _entries(self, annotation: dict[str, Any], group: str, path: Path) -> list[dict[str, Any]]:
        """The entries of one group of an annotation, each an object (else one error naming the file and the entry)."""
        entries = annotation.get(group) or []
        if not isinstance(entries, list):
            raise InputError(f"{path}: {group}", f"is {_kind(entries)}, not a list")
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict):
                raise InputError(f"{path}: {group}[{i}]", f"is {_kind(entry)}, not an object")
        return entries

    def _names(self, annotation: dict[str, Any], field: str, path: Path) -> list[str]:
        values = annotation.get(field) or []
        if not isinstance(values, list):
            raise InputError(f"{path}: {field}", f"is {_kind(values)}, not a list")
        return [str(v) for v in values if isinstance(v, (str, int, float))]

    def _hit(self, path: Path, where: str, **fields: Any) -> SearchHit:
        try:
            return SearchHit(**fields)
        except ValidationError as exc:
            raise InputError(f"{path}: {where}", InputError.from_validation(exc).args[0]) from None

    def _snapshot(self, item: MR2Item, folder: str, html_path: Any) -> Path | None:
        if not html_path or not isinstance(html_path, str):
            return None
        candidate = self.merge / folder / PurePosixPath(html_path).name
        if not candidate.is_file():
            return None
        return self._inside(candidate, "its saved page", item)


class MR2ReverseSearch:
    """Reverse image search answered from ``inverse_annotation.json``."""

    name = "mr2-inverse"
    offline = True

    def __init__(self, trace: MR2Trace) -> None:
        self.trace = trace

    async def search_image(self, query: ImageQuery) -> ReverseImageResult:
        item = self.trace._by_image_hash.get(query.image.sha256)
        if item is None:
            raise InputError(
                "images", f"image {query.image.source} (sha256 {query.image.sha256[:12]}) is not in the MR2 trace at {self.trace.root}"
            )
        trace = self.trace
        path = trace.merge / item.inv_path / "inverse_annotation.json"
        annotation = trace._annotation(item, item.inv_path, "inverse_annotation.json")
        pages: list[SearchHit] = []
        for group, match in _INVERSE_GROUPS:
            for i, entry in enumerate(trace._entries(annotation, group, path)):
                url = entry.get("page_link")
                if not url or any(hit.url == url for hit in pages):
                    continue
                pages.append(trace._hit(
                    path, f"{group}[{i}]", url=url, title=entry.get("title"), snippet=_caption_text(entry.get("caption")),
                    provider=self.name, rank=len(pages), match=match, image_url=entry.get("image_link"),
                    snapshot=trace._snapshot(item, item.inv_path, entry.get("html_path")),
                ))
        return ReverseImageResult(
            provider=self.name, pages=pages, best_guess=trace._names(annotation, "best_guess_lbl", path),
            entities=trace._names(annotation, "entities", path),
        )


class MR2CaptionSearch:
    """Web search for the caption, answered from ``direct_annotation.json``."""

    name = "mr2-direct"
    offline = True

    def __init__(self, trace: MR2Trace) -> None:
        self.trace = trace

    async def search(self, query: str, limit: int = 10) -> list[SearchHit]:
        item = self.trace._by_caption.get(query.strip())
        if item is None:
            shown = query if len(query) <= 60 else query[:57] + "..."
            raise InputError("text", f"the MR2 trace at {self.trace.root} has no caption search for {shown!r}")
        trace = self.trace
        path = trace.merge / item.direct_path / "direct_annotation.json"
        annotation = trace._annotation(item, item.direct_path, "direct_annotation.json")
        hits: list[SearchHit] = []
        for group in _DIRECT_GROUPS:
            for i, entry in enumerate(trace._entries(annotation, group, path)):
                url = entry.get("page_link")
                if not url or any(hit.url == url for hit in hits):
                    continue
                hits.append(trace._hit(
                    path, f"{group}[{i}]", url=url, title=entry.get("page_title"),
                    snippet=entry.get("snippet") or _caption_text(entry.get("caption")),
                    provider=self.name, rank=len(hits), match="web", image_url=entry.get("img_link"),
                    snapshot=trace._snapshot(item, item.direct_path, entry.get("html_path")),
                ))
        return hits[:limit]


def _caption_text(caption: Any) -> str | None:
    if isinstance(caption, dict):
        parts = list(dict.fromkeys(str(v).strip() for v in caption.values() if str(v).strip()))
        return " / ".join(parts) or None
    return str(caption).strip() or None if caption else None
