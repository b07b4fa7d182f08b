"""One post's verdict as a run folder, so that a debate run once (``m3d debate --save``, the live page)
can be reviewed later like a row of an evaluation.

The folder is an ordinary run folder (``run.json``, ``results.jsonl``, ``report.md``) over a data
set of one post that lives in the folder itself (``post.jsonl`` and copies of its images, read by
the ``jsonl`` loader), so the review page shows the post, its images and the whole debate even
after the upload it came from is gone.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from debates.eval.records import MANIFEST, RESULTS, RunManifest, row_from_verdict
from debates.eval.score.report import write_report
from m3d_agents.datasets.base import LoadReport
from m3d_agents.errors import InputError
from m3d_agents.labels import get_taxonomy
from m3d_agents.safe_files import OwnedFolder
from m3d_agents.sample import Sample
from m3d_agents.verdict import Verdict

POST = "post.jsonl"
POST_OPTIONS = {"text": "text", "id": "id", "images": "images"}
"""How the ``jsonl`` loader reads ``post.jsonl`` (with ``label`` and ``taxonomy`` where the post has a gold label)."""


def post_options(sample: Sample) -> dict[str, str]:
    return {**POST_OPTIONS, "taxonomy": sample.taxonomy, **({"label": "label"} if sample.gold_label else {})}


def saved_run_name(config: str, sample_id: str, when: datetime | None = None) -> str:
    """A folder name that sorts by time and says what ran: ``20261126-104500-judged-1a2b3c4d``."""
    stamp = (when or datetime.now(timezone.utc)).strftime("%Y%m%d-%H%M%S")
    safe = "".join(c if c.isalnum() or c in "-_" else "-" for c in config)[:40]
    return f"{stamp}-{safe}-{sample_id[:8]}"


def save_post_run(root: Path, name: str, config: str, sample: Sample, verdict: Verdict, backend: str, seed: int = 0) -> Path:
    """Write the folder ``name`` under ``root`` (the run root or ``--save`` folder the user named) as the run of
    ``config`` over ``sample`` that gave ``verdict``. The folder is made new, and it and every folder between
    ``root`` and it are reached without following a link (:class:`OwnedFolder`)."""
    try:
        written = OwnedFolder(root).create().new_folder(name)
    except InputError as exc:
        raise InputError("save", f"{exc.field}: {exc.problem}") from None
    folder = written.location
    images = []
    for i, image in enumerate(sample.images, start=1):
        name = f"image-{i}{Path(image).suffix.lower() or '.png'}"
        written.copy_in(Path(image), name)
        images.append(name)
    post = {"id": sample.id, "text": sample.text, "images": ";".join(images), "label": sample.gold_label or ""}
    written.write_json(POST, post, indent=None)
    taxonomy = get_taxonomy(sample.taxonomy)
    options = post_options(sample)
    dataset = f"jsonl:{(folder / POST).resolve()}"
    manifest = RunManifest(
        config=config, dataset=dataset, dataset_options=options, backend=backend, seed=seed, taxonomy=sample.taxonomy,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        load_report=LoadReport(kind="jsonl", path=str(folder / POST), options=options, loaded=1, skipped={},
                               taxonomy=sample.taxonomy, labels={sample.gold_label: 1} if sample.gold_label else {}),
    )
    written.write_json(MANIFEST, manifest)
    row = row_from_verdict(
        verdict, index=0, seed=seed, gold=sample.gold_label,
        gold_mis=taxonomy.is_misinformation(sample.gold_label) if sample.gold_label else None,
        latency_s=verdict.diagnostics.wall_time_s if verdict.diagnostics else 0.0, cost_usd=None, config=config, backend=backend,
    )
    with written.append_log(RESULTS) as results:
        results.append_json(row)
    write_report(folder, folder=written)
    return folder
