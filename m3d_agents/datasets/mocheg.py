"""Mocheg ``{train,val,test}/Corpus2.csv``: one row per (claim, evidence paragraph).

Rows repeat the claim once per evidence paragraph, so samples are grouped by ``claim_id``. The
label is ``cleaned_truthfulness``: ``supported`` maps to true, ``refuted`` to false and ``NEI``
(not enough information) to unproven. Mocheg's images are proof images taken from the
fact-check article, not the post, so they would hand the answer to the model: samples are the
claim text alone, and the evidence columns are not used.
"""

from __future__ import annotations

from pathlib import Path

from m3d_agents.datasets.base import dataset, LoadedDataset, LoaderOptions, Skips, make_sample, map_label, read_csv_rows

TAXONOMY = "factcheck"
LABELS: dict[str, str | None] = {"supported": "true", "refuted": "false", "nei": "unproven"}


class Options(LoaderOptions):
    pass


@dataset("mocheg", "Mocheg Corpus2.csv, claims only", Options)
def load(path: Path, options: Options) -> LoadedDataset:
    skips = Skips()
    samples = []
    seen: set[str] = set()
    for row in read_csv_rows(path):
        claim_id = row.text("claim_id").strip()
        if claim_id in seen:
            continue
        seen.add(claim_id)
        label = map_label(row, "cleaned_truthfulness", row.require("cleaned_truthfulness"), LABELS, skips)
        if label is None:
            continue
        sample = make_sample(row, skips, id=f"mocheg-{claim_id}", text=row.text("Claim"), gold_label=label,
                             taxonomy=TAXONOMY)
        if sample is not None:
            samples.append(sample)
    return LoadedDataset.build("mocheg", path, options, samples, skips, TAXONOMY)
