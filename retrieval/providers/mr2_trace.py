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
"""

from __future__ import annotations

import hashlib
import json
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import BaseModel

from m3d_agents.errors import InputError
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
        items_path = self.root / items_file
        if not items_path.is_file():
            raise InputError("replay_mr2", f"{items_path} does not exist; expected an MR2 folder with {items_file}")
        try:
            raw = json.loads(items_path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise InputError(str(items_path), f"not valid JSON: {exc}") from exc
        self.items = {key: MR2Item(id=key, **value) for key, value in raw.items()}

    def ids(self) -> list[str]:
        return list(self.items)

    def item(self, sample_id: str) -> MR2Item:
        if sample_id not in self.items:
            raise InputError("sample_id", f"{sample_id!r} is not in the MR2 trace; known: {', '.join(self.items)}")
        return self.items[sample_id]

    def sample(self, sample_id: str) -> Sample:
        item = self.item(sample_id)
        label = MR2_LABELS.get(item.label) if item.label is not None else None
        return Sample(
            id=item.id, text=item.caption, images=[self.merge / item.image_path], gold_label=label, taxonomy="factcheck"
        )

    def samples(self) -> list[Sample]:
        return [self.sample(key) for key in self.items]

    @cached_property
    def _by_image_hash(self) -> dict[str, MR2Item]:
        table = {}
        for item in self.items.values():
            path = self.merge / item.image_path
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

    def _annotation(self, folder: str, name: str) -> dict[str, Any]:
        path = self.merge / folder / name
        if not path.is_file():
            raise InputError("replay_mr2", f"the trace has no {name} in {self.merge / folder}")
        return dict(json.loads(path.read_text(encoding="utf-8")))

    def _snapshot(self, folder: str, html_path: str | None) -> Path | None:
        if not html_path:
            return None
        candidate = self.merge / folder / PurePosixPath(html_path).name
        return candidate if candidate.is_file() else None


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
        annotation = self.trace._annotation(item.inv_path, "inverse_annotation.json")
        pages: list[SearchHit] = []
        for group, match in _INVERSE_GROUPS:
            for entry in annotation.get(group, []) or []:
                url = entry.get("page_link")
                if not url or any(hit.url == url for hit in pages):
                    continue
                pages.append(
                    SearchHit(
                        url=url, title=entry.get("title"), snippet=_caption_text(entry.get("caption")),
                        provider=self.name, rank=len(pages), match=match, image_url=entry.get("image_link"),
                        snapshot=self.trace._snapshot(item.inv_path, entry.get("html_path")),
                    )
                )
        return ReverseImageResult(
            provider=self.name,
            pages=pages,
            best_guess=[str(label) for label in annotation.get("best_guess_lbl", []) or []],
            entities=[str(entity) for entity in annotation.get("entities", []) or []],
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
        annotation = self.trace._annotation(item.direct_path, "direct_annotation.json")
        hits: list[SearchHit] = []
        for group in _DIRECT_GROUPS:
            for entry in annotation.get(group, []) or []:
                url = entry.get("page_link")
                if not url or any(hit.url == url for hit in hits):
                    continue
                hits.append(
                    SearchHit(
                        url=url, title=entry.get("page_title"),
                        snippet=entry.get("snippet") or _caption_text(entry.get("caption")),
                        provider=self.name, rank=len(hits), match="web", image_url=entry.get("img_link"),
                        snapshot=self.trace._snapshot(item.direct_path, entry.get("html_path")),
                    )
                )
        return hits[:limit]


def _caption_text(caption: Any) -> str | None:
    if isinstance(caption, dict):
        parts = list(dict.fromkeys(str(v).strip() for v in caption.values() if str(v).strip()))
        return " / ".join(parts) or None
    return str(caption).strip() or None if caption else None
