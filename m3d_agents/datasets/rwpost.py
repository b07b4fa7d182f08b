"""RW-Post, the data set of AgentFact: JSON Lines, one fact-checked post per line, in either of two schemas.

- The **flat** schema of the released files (``rwpost_{dev,test}_{main,other_labels}.jsonl``):
  ``claim``, ``post_text``, ``image_address`` (``./post_images/...``, relative to the file's folder),
  ``OCR``, ``claim_time``, ``label`` and the ground truth (``reasoning_logic``, ``key_points``,
  ``fact_checking_evidence`` without ids: an item's id is its position, from 1).
- The **nested** schema of the demo file: the post under ``steps_in_groundtruth_generated.Post``
  (image addresses relative to the repository root) and the evidence, with ids, under
  ``steps_in_groundtruth_generated.Sub_step_5.fact_checking_evidence``.

The model input is the claim, the post text, the post images and, with ``with_ocr``, the text in the
image. The fact-check article (``news_url``), the image's hosting link and the ground-truth evidence
never enter a Sample: they contain the answer. :func:`gold_evidence` reads the evidence on its own,
for the evidence-bounded setting only.

``claim_time`` is the claim's date as the data set gives it: the last day of a month in every row
seen (the data set dates claims by month). The paper drops evidence published after "the original
fact-checking date" (paper line 294) and its code compares with ``claim_time`` as written, so the
default ``claim_date_policy: as_given`` keeps it; ``month_start`` dates each claim at the first day
of its month instead, which also drops the pages of the claim's own month published before it (a
stricter filter than the paper's, for runs that want no page of the fact-check's month).

SATIRE rows appear in the released "other labels" files although the paper excludes satire; they
are skipped and counted, like any label with no fact-check meaning.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import Field

from m3d_agents.datasets.base import (
    ImageResolver,
    LoadedDataset,
    LoaderOptions,
    Row,
    Skips,
    dataset,
    make_sample,
    map_label,
    read_records,
)
from m3d_agents.errors import InputError
from m3d_agents.evidence import Evidence
from m3d_agents.sample import SampleMetadata

TAXONOMY = "factcheck"
LABELS: dict[str, str | None] = {
    "true": "true", "false": "false", "unproven": "unproven", "mixture": "mixture", "outdated": "outdated",
    "satire": None,
}
GOLD_REASON = "RW-Post ground-truth evidence"


class Options(LoaderOptions):
    image_root: Path | None = None
    with_images: bool = True
    with_ocr: bool = False
    claim_date_policy: Literal["as_given", "month_start"] = Field(
        "as_given", description="as_given: the claim date is claim_time as written (the paper); month_start: the first "
        "day of its month (stricter)",
    )


def _repo_root(path: Path) -> Path:
    """Nested-schema image addresses start at the repository root (``Dataset_RW-Post/...``)."""
    for parent in path.parents:
        if (parent / "Dataset_RW-Post").is_dir():
            return parent
    return path.parent


def is_nested(row: Row) -> bool:
    return isinstance(row.data.get("steps_in_groundtruth_generated"), dict)


def _post(row: Row) -> dict[str, Any]:
    return dict((row.data["steps_in_groundtruth_generated"] or {}).get("Post") or {})


def claim_date(row: Row, policy: str) -> date | None:
    raw = row.data.get("claim_time")
    if not raw:
        return None
    try:
        given = date.fromisoformat(str(raw).strip()[:10])
    except ValueError as exc:
        raise InputError(row.field("claim_time"), f"not a YYYY-MM-DD date: {raw!r}") from exc
    return given.replace(day=1) if policy == "month_start" else given


def post_text(row: Row, with_ocr: bool) -> str:
    claim = row.text("claim")
    if is_nested(row):
        post = _post(row)
        body, ocr = str(post.get("text") or ""), str(post.get("OCR") or "")
    else:
        body, ocr = str(row.data.get("post_text") or ""), str(row.data.get("OCR") or "")
    text = claim if not body.strip() or body.strip() == claim.strip() else f"Claim: {claim}\nPost: {body}"
    if with_ocr and ocr.strip():
        text += f"\nText in the post image: {ocr.strip()}"
    return text


def image_addresses(row: Row) -> tuple[list[str], str]:
    """The row's image references and the field they come from."""
    if is_nested(row):
        raw, name = _post(row).get("image_address"), "steps_in_groundtruth_generated.Post.image_address"
    else:
        raw, name = row.data.get("image_address"), "image_address"
    if raw is None or raw == "":
        return [], name
    return [str(a) for a in (raw if isinstance(raw, list) else [raw])], name


def _clean_url(value: Any) -> str | None:
    url = str(value or "").strip().strip("'\"").strip()
    return url if url and url.lower() not in ("none", "null") else None


def _evidence(identifier: str, content: Any, description: Any, source: Any, url: Any, kind: Any) -> Evidence | None:
    text = str(content or "").strip() or str(description or "").strip()
    if not text:
        return None
    link = _clean_url(url)
    host = (urlsplit(link).hostname or "").removeprefix("www.") if link else ""
    title = " · ".join(str(part).strip() for part in (source, kind) if str(part or "").strip()) or None
    return Evidence(id=identifier, kind="corpus", url=link, domain=host or None, title=title, text=text, reason=GOLD_REASON)


def row_evidence(row: Row) -> list[Evidence]:
    """The ground-truth evidence of one row: ids ``E<evidence_id>`` (nested) or ``E<position>`` (flat)."""
    items: list[Evidence | None] = []
    if is_nested(row):
        step = (row.data["steps_in_groundtruth_generated"] or {}).get("Sub_step_5") or {}
        for position, item in enumerate(step.get("fact_checking_evidence") or [], start=1):
            if isinstance(item, dict):
                identifier = f"E{item.get('evidence_id') or position}"
                items.append(_evidence(identifier, item.get("evidence_content"), item.get("evidence_description"),
                                       item.get("evidence_source"), item.get("evidence_url"), item.get("evidence_type")))
    else:
        for position, item in enumerate(row.data.get("fact_checking_evidence") or [], start=1):
            if isinstance(item, dict):
                items.append(_evidence(f"E{position}", item.get("content"), None, item.get("source"), item.get("url"),
                                       item.get("type")))
    return [item for item in items if item is not None]


def sample_id(index: int) -> str:
    return f"rwpost-{index}"


def gold_evidence(path: Path) -> dict[str, list[Evidence]]:
    """Sample id -> the row's ground-truth evidence, for every row with a label (skipped ones included)."""
    return {sample_id(index): row_evidence(row) for index, row in enumerate(read_records(path))}


@dataset("rwpost", "RW-Post (AgentFact) JSON Lines, flat or nested schema, fact-check ratings", Options)
@dataset("agentfact", "alias of rwpost", Options)
def load(path: Path, options: Options) -> LoadedDataset:
    skips = Skips()
    nested_images = ImageResolver(options.image_root or _repo_root(path), options.missing_images, skips,
                           options.images_outside_root)
    flat_images = ImageResolver(options.image_root or path.parent, options.missing_images, skips,
                           options.images_outside_root)
    samples, evidence = [], {}
    for index, row in enumerate(read_records(path)):
        label = map_label(row, "label", row.require("label"), LABELS, skips)
        if label is None:
            continue
        addresses, field_name = image_addresses(row) if options.with_images else ([], "image_address")
        resolver = nested_images if is_nested(row) else flat_images
        paths = resolver.resolve_all(addresses, row, field_name)
        if paths is None:
            continue
        sample = make_sample(
            row, skips, id=sample_id(index), text=post_text(row, options.with_ocr), images=paths, gold_label=label,
            taxonomy=TAXONOMY, metadata=SampleMetadata(claim_date=claim_date(row, options.claim_date_policy), language="en"),
        )
        if sample is not None:
            samples.append(sample)
            evidence[sample.id] = row_evidence(row)
    return LoadedDataset.build("rwpost", path, options, samples, skips, TAXONOMY, gold_evidence=evidence)
