"""Reproduce a paper's table: run every row as an evaluation run, then set our figures beside the paper's.

Each configuration of the table runs once, as :func:`debates.eval.run.evaluate.run_evaluation` runs it
for ``m3d evaluate``, into ``DIR/<configuration>``; a rerun resumes every row where it stopped, so
an interruption loses no finished sample and repeats none. Rows of the paper that share a
configuration (one system on several backbones) share its run.

The table is only ever presented as the paper's setting when it is: the header says what differs
(another model than the paper's backbone, a ``--limit`` subset, a test fixture, a sample count the
paper does not give) and lists every row's departures from its paper (the configuration's own
list and those its run detected, :mod:`debates.eval.score.departures`), and each row says whether
its backbone is the one we ran, what share of its samples ended with no evidence, and what share of
its tool calls were answered "unavailable".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Literal

from pydantic import BaseModel, Field

from debates.eval.run.evaluate import (CheckedRequest, EvaluateRequest, RunProgress, check_request, load_samples, run_evaluation,
                                   subset_of, worker_deaths_line)
from debates.eval.score.departures import asks_for_evidence, run_shares
from debates.eval.score.metrics import compute_metrics
from debates.fidelity import StatedDeparture
from debates.eval.papers.paper_tables import Missing, PaperTable, check_runnable, load_table
from debates.eval.records import EvalRow
from debates.eval.score.report import load_run
from debates.eval.papers.table_figures import METRICS, Figure, row_figures
from debates.config_loader import available_configs
from m3d_agents.safe_files import refuse_foreign_folder, refuse_link, refuse_linked_folder
from m3d_agents.datasets import LoadedDataset, parse_spec
from m3d_agents.datasets.subsets import Subset
from m3d_agents.errors import InputError

TABLE_JSON = "table.json"
TABLE_MD = "table.md"
TABLE_PLOT = "table.png"


@dataclass
class ReproduceRequest:
    """The options of ``m3d reproduce``: a table, and the evaluation run every row of it makes.

    ``evaluation`` holds the options that ``m3d evaluate`` would take; each row's run is that
    request with the row's configuration and ``<out>/<configuration>`` as its folder, so its
    ``config`` is not read and its ``out`` is the table's folder.
    """

    table: str
    evaluation: EvaluateRequest
    resamples: int = 2000
    bootstrap_seed: int = 0

    def row_request(self, config: str) -> EvaluateRequest:
        if self.evaluation.out is None:
            raise InputError("out", "give the table's folder with --out")
        return replace(self.evaluation, config=config, out=self.evaluation.out / config,
                       dataset_options=dict(self.evaluation.dataset_options), rate_limits=dict(self.evaluation.rate_limits))


class Difference(BaseModel):
    """Ours minus the paper's, with our interval moved by the same amount."""

    value: float
    low: float | None
    high: float | None
    paper_within_interval: bool | None


class RowResult(BaseModel):
    id: str
    label: str
    config: str | None
    backbone: str | None
    same_backbone: bool | None
    """Whether the model we ran is the paper's backbone for this row; None when the paper's is not known."""
    status: Literal["done", "incomplete", "no configuration"]
    run_dir: str | None = None
    paper: dict[str, float | None]
    missing: Missing | None = None
    ours: dict[str, Figure] = {}
    difference: dict[str, Difference | None] = {}
    paired: bool = False
    samples: int = 0
    errors: int = 0
    abstained: int = 0
    calls_per_sample: float | None = None
    prompt_tokens_per_sample: float | None = None
    completion_tokens_per_sample: float | None = None
    cost_per_sample_usd: float | None = None
    retrieval: str | None = None
    escalated: float | None = None
    """The share of this run's samples its planner escalated to best-of-N, on the table's scale; None without a planner."""
    paper_escalated: float | None = None
    """The paper's figure for that share on this data set, when it gives one."""
    no_evidence_share: float | None = Field(None, description="share of the run's finished samples that ended with no evidence item")
    unavailable_share: float | None = Field(None, description="share of the run's tool calls answered 'unavailable'")


class DepartureGroup(BaseModel):
    """One departure and the configurations (rows) whose runs have it."""

    configs: list[str]
    departure: StatedDeparture


def group_departures(by_config: dict[str, list[StatedDeparture]]) -> list[DepartureGroup]:
    """Departures shared by several configurations once, with the configurations that have them: the detected ones
    first (what this run's settings and rows show), then the configurations' own lists, each in first-seen order."""
    groups: dict[tuple[str, str], DepartureGroup] = {}
    for config, departures in by_config.items():
        for departure in departures:
            key = (departure.id, departure.text)
            if key in groups:
                groups[key].configs.append(config)
            else:
                groups[key] = DepartureGroup(configs=[config], departure=departure)
    return sorted(groups.values(), key=lambda group: group.departure.origin != "detected")


def departure_lines(groups: list[DepartureGroup], configs: list[str]) -> list[str]:
    """The header's departure lines: each prefixed with the configurations it holds for (or every row)."""
    if not groups:
        return ["departures from the papers: none listed or detected"]
    lines = [f"departures from the papers ({len(groups)}; listed by the configurations or detected):"]
    for group in groups:
        who = "every row" if set(group.configs) >= set(configs) and len(configs) > 1 else ", ".join(group.configs)
        mark = " (detected)" if group.departure.origin == "detected" else ""
        lines.append(f"  {who}: {group.departure.line()}{mark}")
    return lines


class Setting(BaseModel):
    """What this run is, next to what the paper ran: the header of the table."""

    dataset: str
    dataset_kind: str
    samples: int
    available: int
    limit: int | None
    fixture: bool
    paper_split: str | None
    paper_samples: int | None
    backend: str
    model: str
    backbones: list[str]
    papers_setting: bool
    differences: list[str]


class TableResult(BaseModel):
    table: str
    paper: str
    paper_title: str
    title: str
    citation: str
    scale: str
    metrics: list[str]
    setting: Setting
    header: list[str]
    departures: list[DepartureGroup] = []
    rows: list[RowResult]
    notes: list[str]
    bootstrap: dict[str, object]
    created: str
    complete: bool


def model_key(name: str) -> str:
    """A model name reduced to what identifies the model: no provider folder, date suffix, ``-Instruct``
    or punctuation, so that ``Qwen/Qwen3-VL-8B-Instruct`` is ``Qwen3-VL-8B`` and ``gpt-4o-2024-08-06``
    is ``GPT-4o`` (but ``gpt-4o-mini`` is not)."""
    text = name.split(" (")[0].strip().lower().rsplit("/", 1)[-1]
    text = re.sub(r"-\d{4}-\d{2}-\d{2}$", "", text)
    text = re.sub(r"[-_](instruct|chat|it)$", "", text)
    return re.sub(r"[^a-z0-9.]", "", text)


def same_model(model: str, backbone: str | None) -> bool | None:
    return None if not backbone else model_key(model) == model_key(backbone)


def is_fixture(path: Path) -> bool:
    """A file of the test fixtures: a few samples in the data set's format, never the data set."""
    parts = path.resolve().parts
    return any(a == "tests" and b == "fixtures" for a, b in zip(parts, parts[1:]))


def describe_setting(table: PaperTable, kind: str, spec: str, loaded: LoadedDataset, samples: int, limit: int | None,
                     backend: str, model: str, without_evidence: list[str] | None = None,
                     subset: Subset | None = None) -> Setting:
    """What this run is next to the paper's setting; ``without_evidence`` are configurations that ask
    for evidence (a retrieval block, or a tool that searches the web) but ran with retrieval off."""
    _, path = parse_spec(spec)
    paper = table.datasets[kind]
    run_backbones = [row.backbone or table.backbone for row in table.rows if row.config is not None]
    known = [b for b in run_backbones if b]
    differences = []
    if limit is not None and samples < len(loaded.samples):
        chosen = subset or Subset(limit=limit)
        how = "" if chosen.how == "first" else f", --sample {chosen.how}"
        differences.append(f"a subset: {chosen.describe(samples, len(loaded.samples))} (--limit {limit}{how})")
    if is_fixture(path):
        differences.append("a test fixture in the data set's format, not the data set")
    if paper.samples is None:
        differences.append(f"the paper does not give how many samples it scored, so {samples} cannot be checked against it")
    elif samples != paper.samples:
        differences.append(f"{samples} samples, where the paper scored {paper.samples}")
    if not known:
        differences.append("the paper's backbone is not transcribed, so the model cannot be checked against it")
    else:
        matching = sorted({b for b in known if same_model(model, b)})
        others = sorted({b for b in known if not same_model(model, b)})
        if matching and others:
            differences.append(f"backend {backend} runs {model}, the paper's backbone for the rows marked yes only; "
                               f"the others ran on {', '.join(others)}")
        elif others:
            differences.append(f"backend {backend} runs {model}; the paper ran {', '.join(others)}")
        if len(known) < len(run_backbones):
            differences.append("the paper's backbone of some rows is not transcribed")
    if without_evidence:
        them = "it" if len(without_evidence) == 1 else "them"
        differences.append(f"retrieval off for {', '.join(without_evidence)} (the paper's setting gathers evidence for {them})")
    return Setting(
        dataset=spec, dataset_kind=kind, samples=samples, available=len(loaded.samples), limit=limit,
        fixture=is_fixture(path), paper_split=paper.split, paper_samples=paper.samples, backend=backend, model=model,
        backbones=table.backbones(), papers_setting=not differences, differences=differences,
    )


def header_lines(table: PaperTable, setting: Setting, resamples: int, seed: int, paired: bool, retrieval: list[str]) -> list[str]:
    paper_data = ", ".join(filter(None, [setting.paper_split, f"{setting.paper_samples} samples" if setting.paper_samples else None]))
    lines = [
        f"{table.paper} {table.citation.table}: {table.title}",
        f"paper: {table.paper_title}; {table.citation.line()}",
        f"data set: {setting.dataset} ({setting.dataset_kind}), {setting.samples} samples; the paper's: "
        f"{paper_data or 'not given'}",
        f"backend: {setting.backend} (model {setting.model}); the paper's backbones: {', '.join(setting.backbones) or 'not transcribed'}",
    ]
    if setting.papers_setting:
        lines.append(f"setting: the paper's backbone and sample count ({setting.samples}); that the samples are the "
                     "paper's split is not checked")
    else:
        lines.append("setting: NOT the paper's setting: " + "; ".join(setting.differences))
    lines.append(f"retrieval: {'; '.join(retrieval) or 'none'}")
    lines.append(f"intervals: 95% percentile bootstrap over samples, {resamples} resamples, seed {seed}"
                 + (", paired across rows (the same samples)" if paired else ", unpaired where rows hold different samples"))
    lines.append(f"scale: {'percent' if table.scale == 'percent' else 'fractions'}; difference = ours - paper's")
    return lines


def scaled(table: PaperTable, metric: str, value: float | None) -> float | None:
    if value is None:
        return None
    return value * 100.0 if table.scale == "percent" and METRICS[metric].rate else value


def _difference(ours: Figure, paper: float | None) -> Difference | None:
    if ours.value is None or paper is None:
        return None
    low = None if ours.low is None else ours.low - paper
    high = None if ours.high is None else ours.high - paper
    within = None if ours.low is None or ours.high is None else ours.low <= paper <= ours.high
    return Difference(value=ours.value - paper, low=low, high=high, paper_within_interval=within)


def table_result(table: PaperTable, setting: Setting, runs: dict[str, tuple[Path, list[EvalRow], str | None]],
                 *, resamples: int, seed: int, kind: str,
                 departures: dict[str, list[StatedDeparture]] | None = None) -> TableResult:
    """The table from the rows of each configuration's run (keyed by configuration); ``departures`` are each
    run's, from its ``run.json``."""
    figures = row_figures({config: rows for config, (_, rows, _) in runs.items()}, table.metrics, resamples=resamples, seed=seed)
    taxonomy_of = {config: (rows[0].taxonomy if rows else table.taxonomy) for config, (_, rows, _) in runs.items()}
    results = []
    for row in table.rows:
        backbone = row.backbone or table.backbone
        paper = {m: table.figures(row, kind)[m] for m in table.metrics}
        missing = table.missing_of(row) if any(v is None for v in paper.values()) else None
        base = RowResult(id=row.id, label=row.label, config=row.config, backbone=backbone,
                         same_backbone=same_model(setting.model, backbone), status="no configuration", paper=paper,
                         missing=missing, paper_escalated=row.escalation.get(kind))
        if row.config is None or row.config not in runs:
            results.append(base)
            continue
        run_dir, rows, retrieval = runs[row.config]
        metrics = compute_metrics(rows, taxonomy_of[row.config])
        shares = run_shares(rows)
        found = figures[row.config]
        ours = {m: Figure(value=scaled(table, m, f.value), low=scaled(table, m, f.low), high=scaled(table, m, f.high),
                          samples=f.samples) for m, f in found.figures.items()}
        results.append(base.model_copy(update={
            "status": "done" if len(rows) == setting.samples else "incomplete", "run_dir": str(run_dir), "ours": ours,
            "difference": {m: _difference(ours[m], paper[m]) for m in table.metrics}, "paired": found.paired,
            "samples": len(rows), "errors": metrics.errors, "abstained": metrics.abstained,
            "calls_per_sample": metrics.calls_per_sample, "prompt_tokens_per_sample": metrics.prompt_tokens_per_sample,
            "completion_tokens_per_sample": metrics.completion_tokens_per_sample,
            "cost_per_sample_usd": metrics.cost_per_sample_usd, "retrieval": retrieval,
            "no_evidence_share": shares.no_evidence_share, "unavailable_share": shares.unavailable_share,
            "escalated": None if metrics.escalation is None else
            metrics.escalation.share * (100.0 if table.scale == "percent" else 1.0),
        }))
    paired = all(r.paired for r in results if r.status != "no configuration")
    by_mode: dict[str, list[str]] = {}
    for config, (_, _, mode) in runs.items():
        by_mode.setdefault(mode or "not recorded", []).append(config)
    modes = ([f"{next(iter(by_mode))} for every row"] if len(by_mode) == 1
             else [f"{mode} for {', '.join(configs)}" for mode, configs in sorted(by_mode.items())])
    groups = group_departures({config: list((departures or {}).get(config, [])) for config in runs})
    return TableResult(
        table=table.id, paper=table.paper, paper_title=table.paper_title, title=table.title,
        citation=table.citation.line(), scale=table.scale, metrics=table.metrics, setting=setting,
        header=[*header_lines(table, setting, resamples, seed, paired, modes), *departure_lines(groups, list(runs))],
        departures=groups, rows=results,
        notes=list(table.notes), bootstrap={"resamples": resamples, "seed": seed, "paired": paired, "interval": "95% percentile"},
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        complete=all(r.status != "incomplete" for r in results),
    )


@dataclass
class Reproduction:
    """A checked ``m3d reproduce``: the table, and one checked evaluation run per configuration."""

    request: ReproduceRequest
    table: PaperTable
    kind: str
    runs: dict[str, CheckedRequest]


def check_reproduction(request: ReproduceRequest) -> Reproduction:
    """Every option checked before any sample is read: the table, its configurations, the data set's kind, each run folder."""
    table = load_table(request.table)
    kind = request.evaluation.dataset.partition(":")[0].strip().lower()
    check_runnable(table, available_configs(), kind)
    kind, _ = parse_spec(request.evaluation.dataset)
    if kind not in table.datasets:
        raise InputError("dataset", f"{table.id} reports on {', '.join(table.datasets)}, not on {kind}")
    if request.resamples < 100:
        raise InputError("resamples", "must be at least 100")
    if request.evaluation.out is None:
        raise InputError("out", "give the table's folder with --out")
    configs = set(table.configs())
    table_files = {TABLE_JSON, TABLE_MD, TABLE_PLOT}
    refuse_foreign_folder(
        request.evaluation.out, "out", lambda name: name in configs or name in table_files or name.startswith(tuple(f".{f}." for f in table_files)),
        f"the folder of a {table.id} reproduction",
    )
    # The rows' run folders and the table's files are the product's own, inside the folder the user named: a link
    # there is refused now, before hours of runs (and again by every write).
    for config in configs:
        refuse_linked_folder(request.evaluation.out / config)
    for name in table_files:
        refuse_link(request.evaluation.out / name)
    runs = {config: check_request(request.row_request(config)) for config in table.configs()}
    return Reproduction(request=request, table=table, kind=kind, runs=runs)


@dataclass
class ReproduceOutcome:
    result: TableResult | None
    """None when the run was interrupted before every row finished."""
    interrupted: bool
    ran: dict[str, int]
    """Samples each configuration ran this time (0 for a row already complete)."""
    worker_deaths: dict[str, str] = field(default_factory=dict)
    """Per configuration run on Ray, what workers that died cost it (none when no worker died)."""
    left_out: list[str] = field(default_factory=list)
    """Neighbouring run folders that could not be read and were left out of the trade-off plots, one line each."""


async def reproduce(
    checked: Reproduction, *, progress: RunProgress | None = None, note: Callable[[str], None] | None = None,
) -> ReproduceOutcome:
    """Run (or resume) every row of the table, then build the table from their runs; writes nothing
    but the runs (see :func:`write_table`)."""
    request = checked.request
    first = next(iter(checked.runs.values()))
    loaded, samples = load_samples(first.request)
    wanted = {s.id for s in samples}
    runs: dict[str, tuple[Path, list[EvalRow], str | None]] = {}
    departures: dict[str, list[StatedDeparture]] = {}
    ran: dict[str, int] = {}
    deaths: dict[str, str] = {}
    left_out: list[str] = []
    for position, (config, run) in enumerate(checked.runs.items()):
        done = await run_evaluation(run, loaded=loaded, progress=progress, note=note if position == 0 else None)
        left_out += [line for line in done.summary.left_out if line not in left_out]
        ran[config] = done.outcome.ran
        died = worker_deaths_line(done.outcome)
        if died:
            deaths[config] = died
        if done.outcome.interrupted:
            return ReproduceOutcome(result=None, interrupted=True, ran=ran, worker_deaths=deaths, left_out=left_out)
        manifest, rows = load_run(done.outcome.out_dir)
        runs[config] = (done.outcome.out_dir, [r for r in rows if r.sample_id in wanted], manifest.retrieval)
        departures[config] = manifest.departures
    settings = first.settings.get(first.backend_name)
    without_evidence = [config for config, (_, _, mode) in runs.items()
                        if mode == "off" and asks_for_evidence(checked.runs[config].strategy)]
    setting = describe_setting(checked.table, checked.kind, request.evaluation.dataset, loaded, len(samples),
                               request.evaluation.limit, first.backend_name, settings.model_name, without_evidence,
                               subset_of(first.request))
    result = table_result(checked.table, setting, runs, resamples=request.resamples, seed=request.bootstrap_seed,
                          kind=checked.kind, departures=departures)
    return ReproduceOutcome(result=result, interrupted=False, ran=ran, worker_deaths=deaths, left_out=left_out)
