"""``m3d reproduce TABLE --plan``: what a reproduction would run and how it would depart from the paper, before it runs.

Nothing is called: no model, no provider, no data set. From the table, its configurations, the
config file and the environment it says, per row, which configuration runs, on which backend
(and which backend each model-backed tool uses), which tools stand in for what the paper ran, and
at most how many model calls and answer tokens a sample costs under the configuration's own
limits; and under the header, every departure already visible (a provider without its key, a tool
on the agent's own model, another backbone than the paper's, a text-only backend ...). A user reads
this before spending GPU hours.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

from pydantic import BaseModel

from debates.config_loader import available_configs, load_config
from debates.eval.papers.paper_tables import PaperRow, check_runnable, load_table
from debates.eval.papers.reproduce import DepartureGroup, departure_lines, group_departures, same_model
from debates.eval.score.departures import PlannedRun, planned_departures
from debates.fidelity import StatedDeparture
from debates.strategy import CallBudget
from m3d_agents.backends.config import load_backend_settings, resolve_backend_name
from m3d_agents.verdict import RetrievalMode


@dataclass
class PlanRequest:
    table: str
    backend: str | None = None
    config_file: Path | None = None
    retrieval: str | None = None
    env: Mapping[str, str] | None = None
    """Where keys are looked for; None: the process environment."""


class ToolPlan(BaseModel):
    name: str
    backend: str | None = None
    """Where its model calls go; None for a tool that calls no model."""
    own_backend: bool = False
    checkpoint: str | None = None
    stands_in_for: str | None = None


class RowPlan(BaseModel):
    id: str
    label: str
    config: str | None
    backbone: str | None
    same_backbone: bool | None
    strategy: str | None = None
    outline: str | None = None
    """The configuration's form in a few words (a debate's protocol and seats in order)."""
    backend: str | None = None
    model: str | None = None
    vision: bool | None = None
    tools: list[ToolPlan] = []
    budget: CallBudget | None = None
    answer_tokens: int | None = None
    """The cap on each answer: the configuration's, else the backend's max_tokens; under the embedded model's own cap."""


class TablePlan(BaseModel):
    table: str
    title: str
    paper: str
    backend: str
    model: str
    mode: str
    backbones: list[str]
    rows: list[RowPlan]
    departures: list[DepartureGroup]


def _tools(run: PlannedRun) -> list[ToolPlan]:
    from m3d_agents.tools.catalogue import default_registry
    from m3d_agents.tools.forensics.learned import describe_checkpoint

    registry = default_registry()
    bindings = run.tools
    found = []
    for name in run.config.tools_used():
        card = registry.card(name)
        binding = bindings.get(name)
        paper = run.config.tools[name].paper if name in run.config.tools else None
        found.append(ToolPlan(
            name=name, backend=run.tool_backend(name) if card.calls_model else None,
            own_backend=bool(card.calls_model and binding is not None and binding.backend),
            checkpoint=describe_checkpoint(binding.model) if card.loads_checkpoint and binding and binding.model else None,
            stands_in_for=f"{paper.runs} (paper line {paper.paper_line})" if paper else None,
        ))
    return found


def plan_table(request: PlanRequest) -> TablePlan:
    """The plan of a reproduction of ``request.table``; reads configurations and settings only."""
    from retrieval.runpath import parse_mode

    table = load_table(request.table)
    check_runnable(table, available_configs())
    settings = load_backend_settings(request.config_file)
    override = request.backend or os.environ.get("M3D_BACKEND")
    default = resolve_backend_name(request.backend, settings)
    backend = settings.get(default)
    mode: RetrievalMode | None = parse_mode(request.retrieval)
    runs: dict[str, PlannedRun] = {}
    for name in table.configs():
        config = load_config(name)
        agents = override or config.backend or default
        runs[name] = PlannedRun(config=config, backend_name=agents, backend=settings.get(agents), mode=mode,
                                file_tools=settings.tools, env=request.env, lookup=settings.get, overridden=override is not None)
    by_config: dict[str, list[StatedDeparture]] = {name: planned_departures(run) for name, run in runs.items()}
    for name, departures in by_config.items():
        departures += _backbone(table.rows, name, runs[name])
    rows = []
    for row in table.rows:
        backbone = row.backbone or table.backbone
        run = runs.get(row.config) if row.config else None
        plan = RowPlan(id=row.id, label=row.label, config=row.config, backbone=backbone, same_backbone=None)
        if run is not None:
            budget = run.config.call_budget()
            plan = plan.model_copy(update={
                "same_backbone": same_model(run.backend.model_name, backbone), "strategy": run.config.strategy,
                "outline": run.config.form(),
                "backend": run.backend_name, "model": run.backend.model_name, "vision": run.backend.has_vision,
                "tools": _tools(run), "budget": budget,
                "answer_tokens": run.backend.answer_tokens(budget.answer_tokens if budget else None),
            })
        rows.append(plan)
    return TablePlan(table=table.id, title=f"{table.paper} {table.citation.table}: {table.title}", paper=table.paper,
                     backend=default, model=backend.model_name,
                     mode=mode or "each configuration's default (record with a retrieval block, else off)",
                     backbones=table.backbones(), rows=rows, departures=group_departures(by_config))


def _backbone(rows: list[PaperRow], config: str, run: PlannedRun) -> list[StatedDeparture]:
    """Another model than the paper's backbone for the rows of ``config``."""
    backbones = sorted({r.backbone for r in rows if r.config == config and r.backbone})
    if not backbones or any(same_model(run.backend.model_name, b) for b in backbones):
        return []
    return [StatedDeparture(id="backbone", origin="detected", text=f"backend {run.backend_name} runs {run.backend.model_name}; "
                            f"the paper ran {', '.join(backbones)}")]


def plan_lines(plan: TablePlan) -> list[str]:
    """The plan as printed: the header, the departures, then one block per row."""
    lines = [
        plan.title,
        "plan only: nothing runs; no model, provider or data set was asked",
        f"backend: {plan.backend} (model {plan.model}); the paper's backbones: {', '.join(plan.backbones) or 'not transcribed'}",
        f"retrieval: {plan.mode}",
        *departure_lines(plan.departures, [r.config for r in plan.rows if r.config]),
        "rows:",
    ]
    shown: set[str] = set()
    for row in plan.rows:
        if row.config is None:
            lines.append(f"  {row.id}: {row.label} [{row.backbone or 'backbone not transcribed'}] - not run (no configuration)")
            continue
        mark = {True: "yes", False: "no", None: "?"}[row.same_backbone]
        lines.append(f"  {row.id}: {row.label} [paper's backbone {row.backbone or 'not transcribed'}; ours the same? {mark}]")
        if row.config in shown:
            lines.append(f"    configuration {row.config}, as above")
            continue
        shown.add(row.config)
        sight = "sees images" if row.vision else "text-only"
        lines.append(f"    configuration {row.config} ({row.outline or row.strategy}); agents on {row.backend} ({row.model}, {sight})")
        for tool in row.tools:
            whose = "its own backend" if tool.own_backend else "the agent's backend"
            where = f"on {tool.backend} ({whose})" if tool.backend else "calls no model"
            extra = f"; weights: {tool.checkpoint}" if tool.checkpoint else ""
            stand_in = f"; stands in for the paper's {tool.stands_in_for}" if tool.stands_in_for else ""
            lines.append(f"    tool {tool.name}: {where}{extra}{stand_in}")
        if row.budget is None:
            lines.append("    budget: this strategy gives no bound on its calls")
        else:
            tokens = row.budget.calls * row.answer_tokens if row.answer_tokens else None
            calls = "1 model call" if row.budget.calls == 1 else f"{row.budget.calls} model calls"
            lines.append(f"    budget per sample: at most {calls}"
                         + (f" and {tokens} answer tokens ({row.answer_tokens} per answer)" if tokens else "")
                         + f"; prompt tokens grow with the evidence (counted: {row.budget.counts})")
    return lines
