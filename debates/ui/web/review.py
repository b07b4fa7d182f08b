"""The review page: run folders under the server's run roots, read only, except for reviewers' annotations.

The run folder is the contract between the runner and this page (``run.json``, ``results.jsonl``,
``report.md``, the plots): the page reads what :mod:`debates.eval` wrote and never reaches into a
runner. The one thing it writes is a reviewer's override, appended to ``annotations.jsonl``
through :func:`debates.eval.score.annotations.append_annotation`.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import ValidationError
from starlette.responses import HTMLResponse

from debates.eval.score.annotations import ANNOTATIONS, Annotation, GoldSource, append_annotation, latest_labels, read_annotations
from debates.eval.records import MANIFEST, RESULTS, RunManifest
from debates.eval.run.saved_post import POST
from debates.eval.score.caveats import planned_samples
from debates.eval.score.metrics import RunMetrics, compute_metrics
from debates.eval.records import EvalRow
from debates.eval.score.report import REPORT, load_run
from debates.ui.web.app_state import app_state
from debates.ui.web.errors import PageError
from debates.ui.web.forms import checked_form, text_field
from debates.ui.web.security import find_runs, read_member_bytes, resolve_run_ref, run_member
from m3d_agents.datasets import load_dataset
from m3d_agents.errors import InputError
from m3d_agents.labels import get_taxonomy
from m3d_agents.media.images import load_image
from m3d_agents.sample import Sample
from m3d_agents.verdict import Verdict

router = APIRouter()

Show = Literal["all", "wrong", "correct", "abstained", "errors"]
SHOWS: tuple[Show, ...] = ("all", "wrong", "correct", "abstained", "errors")


@dataclass
class OpenRun:
    ref: str
    folder: Path
    manifest: RunManifest
    rows: list[EvalRow]
    annotations: list[Annotation]
    against: GoldSource

    @property
    def labels(self) -> list[str]:
        return get_taxonomy(self.manifest.taxonomy).labels

    def metrics(self) -> RunMetrics:
        return compute_metrics(self.rows, self.manifest.taxonomy)

    def row(self, sample_id: str) -> EvalRow:
        for row in self.rows:
            if row.sample_id == sample_id:
                return row
        raise PageError(404, f"The run has no sample {sample_id!r}.")

    def plots(self) -> list[str]:
        """The run's plots; none for a run without a gold label (a saved debate), whose plots could only be empty."""
        if not any(row.scored for row in self.rows):
            return []
        names = sorted(p.name for p in self.folder.glob("*.png") if p.is_file())
        return [n for n in names if run_member(self.folder, n).resolve().parent == self.folder.resolve()]


def open_run(request: Request, ref: str, against: str = "dataset") -> OpenRun:
    """The run folder ``ref`` names, refused unless it lies under a run root; its files are not links out."""
    settings = app_state(request).settings
    folder = resolve_run_ref(settings.run_roots, ref)
    for name in (MANIFEST, RESULTS, ANNOTATIONS):
        member = run_member(folder, name)
        if member.is_symlink():
            raise PageError(403, f"Refused: {name} of this run folder is a symbolic link; the page reads only plain files.")
    if not (folder / MANIFEST).is_file():
        raise PageError(404, f"{ref} is a folder but not a run folder (it has no {MANIFEST}).")
    gold: GoldSource = "annotations" if against == "annotations" else "dataset"
    try:
        manifest, rows = load_run(folder, gold)
        annotations = read_annotations(folder)
    except InputError as exc:
        raise PageError(400, f"The run folder cannot be read: {exc}") from None
    except (ValueError, ValidationError) as exc:
        raise PageError(400, f"The run folder cannot be read: {type(exc).__name__} in {MANIFEST}") from None
    except OSError as exc:
        raise PageError(400, f"The run folder cannot be read: {exc.strerror or type(exc).__name__}") from None
    return OpenRun(ref, folder, manifest, rows, annotations, gold)


def matches(row: EvalRow, show: str, gold_label: str, predicted: str) -> bool:
    if gold_label and row.gold != gold_label:
        return False
    if predicted and (row.label or "") != predicted:
        return False
    if show == "wrong":
        return row.status == "ok" and row.gold is not None and row.label != row.gold
    if show == "correct":
        return row.status == "ok" and row.gold is not None and row.label == row.gold
    if show == "abstained":
        return row.status == "abstained"
    if show == "errors":
        return row.status == "error"
    return True


@dataclass
class ListedRun:
    """One line of the list of runs: where it is, what it is, and whether it is done."""

    ref: str
    name: str
    """The folder as a person knows it: the run root's own name, then the path under it."""
    manifest: RunManifest | None
    samples: int
    annotated: bool
    state: str
    """finished, unfinished (n of m), empty or cannot be read."""


def run_state(manifest: RunManifest, done: int) -> str:
    planned = planned_samples(manifest)
    if done == 0:
        return "empty: no sample finished"
    if planned is not None and done < planned:
        return f"unfinished: {done} of {planned}"
    return "finished"


def root_names(roots: list[Path]) -> list[str]:
    """Each run root by its folder's name, with enough of its parents to tell two roots of one name apart."""
    names = [root.resolve().name or str(root) for root in roots]
    return [str(root.resolve()) if names.count(name) > 1 else name for root, name in zip(roots, names)]


@router.get("/review")
async def runs(request: Request) -> HTMLResponse:
    state = app_state(request)
    named = root_names(list(state.settings.run_roots))
    listed: list[ListedRun] = []
    for ref, folder in find_runs(state.settings.run_roots):
        index, _, rest = ref.partition("/")
        name = f"{named[int(index)]}/{rest}" if rest else named[int(index)]
        try:
            manifest, rows = load_run(folder)
            listed.append(ListedRun(ref, name, manifest, len(rows), (folder / ANNOTATIONS).is_file(),
                                    run_state(manifest, len(rows))))
        except (InputError, ValueError, ValidationError):
            listed.append(ListedRun(ref, name, None, 0, False, "cannot be read"))
    roots = list(enumerate(named))
    return state.pages.render(request, "runs.html", runs=listed, roots=roots)


@router.get("/review/run")
async def run_page(request: Request, ref: str = "", show: str = "all", gold_label: str = "", predicted: str = "",
                   against: str = "dataset") -> HTMLResponse:
    state = app_state(request)
    run = open_run(request, ref, against)
    if show not in SHOWS:
        raise PageError(400, f"show: {show!r} is not one of {', '.join(SHOWS)}")
    for name, value in (("gold_label", gold_label), ("predicted", predicted)):
        if value and value not in run.labels:
            raise PageError(400, f"{name}: {value!r} is not a label of the {run.manifest.taxonomy} taxonomy")
    shown = [r for r in run.rows if matches(r, show, gold_label, predicted)]
    report = read_member_bytes(run.folder, REPORT).decode("utf-8", "replace") if (run.folder / REPORT).is_file() else None
    return state.pages.render(
        request, "run.html", run=run, rows=shown, show=show, shows=SHOWS, gold_label=gold_label, predicted=predicted,
        metrics=run.metrics(), overrides=latest_labels(run.annotations), report=report,
        query=urlencode({"ref": ref, "against": run.against}),
    )


def dataset_post(request: Request, manifest: RunManifest, sample_id: str, folder: Path | None = None) -> Sample | None:
    """The post itself, when the server was started with the run's data set, or when the run folder holds it
    (a saved debate: :mod:`debates.eval.run.saved_post`)."""
    for sample in app_state(request).settings.datasets.get(manifest.dataset, []):
        if sample.id == sample_id:
            return sample
    return saved_post(folder, manifest, sample_id) if folder is not None else None


def saved_post(folder: Path, manifest: RunManifest, sample_id: str) -> Sample | None:
    """The post a saved debate keeps in its own folder; never a file outside it or behind a link."""
    member = run_member(folder, POST)
    if not manifest.dataset.startswith("jsonl:") or Path(manifest.dataset[6:]).name != POST:
        return None
    if not member.is_file() or member.is_symlink():
        return None
    try:
        loaded = load_dataset(f"jsonl:{member}", {k: str(v) for k, v in manifest.dataset_options.items()})
    except (InputError, ValueError, ValidationError):
        return None
    for sample in loaded.samples:
        inside = all(Path(p).resolve().parent == folder.resolve() and not Path(p).is_symlink() for p in sample.images)
        if sample.id == sample_id and inside:
            return sample
    return None


@router.get("/review/sample")
async def sample_page(request: Request, ref: str = "", id: str = "", against: str = "dataset", saved: int = 0) -> HTMLResponse:
    state = app_state(request)
    run = open_run(request, ref, against)
    row = run.row(id)
    verdict = None
    if row.verdict is not None:
        try:
            verdict = Verdict.model_validate(row.verdict)
        except ValidationError:
            verdict = None
    history = [a for a in run.annotations if a.sample_id == id]
    return state.pages.render(
        request, "sample.html", run=run, row=row, verdict=verdict, history=history, saved=bool(saved),
        post=dataset_post(request, run.manifest, id, run.folder), query=urlencode({"ref": ref, "against": run.against}),
    )


@router.post("/review/annotate")
async def annotate(request: Request) -> Response:
    form = await checked_form(request)
    ref = text_field(form, "ref", max_chars=2000, required=True)
    run = open_run(request, ref)
    sample_id = text_field(form, "sample_id", max_chars=500, required=True, label="sample")
    label = text_field(form, "label", max_chars=100, required=True, label="label")
    note = text_field(form, "note", max_chars=4000, label="note")
    reviewer = text_field(form, "reviewer", max_chars=120, label="reviewer")
    if run_member(run.folder, ANNOTATIONS).is_symlink():
        raise PageError(403, f"Refused: {ANNOTATIONS} is a symbolic link; annotations are written to plain files only.")
    try:
        append_annotation(run.folder, run.rows, run.manifest.taxonomy, sample_id=sample_id, label=label, note=note,
                          reviewer=reviewer)
    except InputError as exc:
        raise PageError(400, str(exc)) from None
    query = urlencode({"ref": ref, "id": sample_id, "saved": 1})
    return RedirectResponse(f"/review/sample?{query}", status_code=303)


@router.get("/review/file")
async def run_file(request: Request, ref: str = "", name: str = "") -> Response:
    run = open_run(request, ref)
    if not name.endswith(".png"):
        raise PageError(403, "Refused: the review page serves only a run's plots (PNG files).")
    return Response(read_member_bytes(run.folder, name), media_type="image/png", headers={"cache-control": "no-store"})


@router.get("/review/post-image")
async def post_image(request: Request, ref: str = "", id: str = "", index: int = 0) -> Response:
    run = open_run(request, ref)
    post = dataset_post(request, run.manifest, id, run.folder)
    if post is None or not 0 <= index < len(post.images):
        raise PageError(404, "This server has no such image: start it with the run's data set to see its posts.")
    try:
        data = (await asyncio.to_thread(load_image, post.images[index], app_state(request).settings.limits)).png_bytes()
    except InputError as exc:
        raise PageError(404, f"The post's image cannot be shown: {exc.problem}") from None
    return Response(data, media_type="image/png", headers={"cache-control": "private, max-age=600"})
