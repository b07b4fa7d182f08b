"""Reviewers' label overrides for a run: ``annotations.jsonl`` in the run folder.

A reviewer who finds a data set's label wrong records the label they believe, with a note. The
file is a log, never a table: each override is one appended, fsynced row, and earlier rows are
never rewritten, so the history of who changed what stays readable and a crash cannot damage a
row already written. A torn last line that a crash left is cut off before the next append (as
``results.jsonl``'s is), so it can never glue itself to the next override. Where a sample was annotated more than once, the latest row counts.

Scoring a run "against the annotations" replaces the gold label of every annotated sample by the
reviewer's label and keeps the data set's label elsewhere; the results file itself is untouched.
"""

from __future__ import annotations

import os
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Literal, Sequence

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from debates.eval.records import EvalRow, ResultsFile
from m3d_agents.errors import InputError
from m3d_agents.labels import get_taxonomy
from m3d_agents.safe_files import read_bytes_nofollow
from m3d_agents.safe_json import loads_bounded

ANNOTATIONS = "annotations.jsonl"

GoldSource = Literal["dataset", "annotations"]
"""What a run is scored against: the data set's labels, or those labels with reviewers' overrides."""

_append_lock = threading.Lock()


class Annotation(BaseModel):
    """One reviewer's override of one sample's gold label."""

    model_config = ConfigDict(extra="forbid")

    sample_id: str = Field(min_length=1, max_length=500)
    label: str = Field(description="the label the reviewer believes is right, in the run's taxonomy")
    note: str = Field("", max_length=4000)
    reviewer: str = Field("", max_length=120)
    previous_gold: str | None = Field(None, description="the data set's label when the override was made")
    predicted: str | None = Field(None, description="what the run answered, for the reader of the log")
    created: str = Field(description="UTC time of the override, ISO 8601")


def read_annotations(run_dir: Path) -> list[Annotation]:
    """Every complete row, oldest first. A torn last line (a crash during an append) is skipped;
    a bad line anywhere else means the file was edited by hand, which is an error naming the line."""
    path = run_dir / ANNOTATIONS
    if not os.path.lexists(path):
        return []
    lines = read_bytes_nofollow(path).split(b"\n")
    found: list[Annotation] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            if number == len(lines):
                raise ValueError("no newline at the end")
            found.append(Annotation.model_validate(loads_bounded(line)))
        except (ValueError, ValidationError) as exc:
            if number == len(lines):
                break
            raise InputError(f"{ANNOTATIONS}:{number}", f"not an annotation row ({exc}); the file was changed by hand") from exc
    return found


def latest_labels(annotations: Iterable[Annotation]) -> dict[str, Annotation]:
    """The annotation that counts for each sample: the latest one."""
    latest: dict[str, Annotation] = {}
    for annotation in sorted(annotations, key=lambda a: a.created):
        latest[annotation.sample_id] = annotation
    return latest


def append_annotation(
    run_dir: Path, rows: Sequence[EvalRow], taxonomy: str, *, sample_id: str, label: str, note: str = "", reviewer: str = ""
) -> Annotation:
    """Check the override against the run (the sample exists, the label is in its taxonomy) and append it."""
    by_id = {row.sample_id: row for row in rows}
    row = by_id.get(sample_id)
    if row is None:
        raise InputError("sample_id", f"the run has no sample {sample_id!r}")
    labels = get_taxonomy(taxonomy).labels
    if label not in labels:
        raise InputError("label", f"{label!r} is not a label of the {taxonomy} taxonomy ({', '.join(labels)})")
    annotation = Annotation(
        sample_id=sample_id, label=label, note=note.strip(), reviewer=reviewer.strip(), previous_gold=row.gold,
        predicted=row.label, created=datetime.now(timezone.utc).isoformat(timespec="microseconds"),
    )
    log = ResultsFile(run_dir / ANNOTATIONS)
    with _append_lock:
        log.open()
        try:
            log.append(annotation)
        finally:
            log.close()
    return annotation


def with_annotated_gold(rows: Sequence[EvalRow], annotations: Iterable[Annotation], taxonomy: str) -> tuple[list[EvalRow], int]:
    """The rows with each annotated sample's gold label replaced by the reviewer's, and how many rows were annotated."""
    latest = latest_labels(annotations)
    scheme = get_taxonomy(taxonomy)
    out: list[EvalRow] = []
    annotated = 0
    for row in rows:
        annotation = latest.get(row.sample_id)
        if annotation is None:
            out.append(row)
            continue
        annotated += 1
        out.append(row.model_copy(update={"gold": annotation.label, "gold_misinformation": scheme.is_misinformation(annotation.label)}))
    return out, annotated
