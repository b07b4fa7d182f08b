"""Every departure of a run from the paper its configuration is named after, found in one place.

Two kinds, one list (:class:`~debates.fidelity.StatedDeparture`):

- **planned**, known before any sample runs, from the configuration, the backends, the retrieval
  mode and the environment (:func:`planned_departures`): the configuration's own ``departures:``
  list, its stand-in tools, a tool left on the agent's model where the paper runs a separate one, a
  provider listed without its key (and, when nothing can be gathered, that the rows gather no
  evidence and which evidence is missing), retrieval off or replayed, a text-only backend for a
  multimodal paper, and the departures a configuration states only for such runs (``when:``);
- **from the rows**, once samples ran (:func:`row_departures`): samples that ended with no
  evidence item, and tool calls answered "unavailable", per tool.

``m3d reproduce --plan`` prints the planned ones; ``m3d evaluate`` stores them in ``run.json`` and adds
the rows' at the end; ``m3d reproduce`` prints every row's under the table's header.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from pydantic import BaseModel

from debates.eval.records import EvalRow
from debates.fidelity import StatedDeparture, slug
from debates.strategy import StrategyConfig
from debates.tool_settings import merged_tools
from m3d_agents.backends.config import BackendConfig, ToolBinding
from m3d_agents.verdict import RetrievalMode, ToolUsage
from m3d_agents.tools.forensics.learned import MODEL_ENV
from m3d_agents.tools.forensics.learned import NAME as DETECTOR
from retrieval.readiness import USES, readiness


@dataclass(frozen=True)
class PlannedRun:
    """What a run of one configuration will be, as far as it is known before any sample: no model or provider is asked."""

    config: StrategyConfig
    backend_name: str
    """The agents' backend (``--backend``, else the configured default)."""
    backend: BackendConfig
    mode: RetrievalMode | None = None
    """``--retrieval``; None: the configuration's default (record with a retrieval block, else off)."""
    file_tools: Mapping[str, ToolBinding] = field(default_factory=dict)
    """The config file's ``tools:`` block."""
    lookup: Callable[[str], BackendConfig] | None = None
    """The settings of a backend by name, for seats on backends of their own; None: every seat on ``backend``."""
    overridden: bool = False
    """``--backend`` was given: every seat runs on ``backend``, whatever the configuration names."""
    env: Mapping[str, str] | None = None
    """The environment the keys are read from; None: ``os.environ``."""

    @property
    def retrieval_mode(self) -> RetrievalMode:
        return self.mode or ("record" if self.config.retrieval is not None else "off")

    @property
    def tools(self) -> dict[str, ToolBinding]:
        return dict(merged_tools(self.config.tools, self.file_tools))

    def seat_backend(self, name: str | None) -> BackendConfig:
        """The backend a seat naming ``name`` (None: none) runs on in this run."""
        if name is None or self.overridden or self.lookup is None:
            return self.backend
        return self.lookup(name)

    def tool_backend(self, tool: str) -> str:
        """The backend a model-backed tool's calls go to in this run."""
        return self.tools.get(tool, ToolBinding()).backend or self.backend_name


def _detected(id_: str, text: str, paper_line: str | None = None) -> StatedDeparture:
    return StatedDeparture(id=id_, text=text, paper_line=paper_line, origin="detected")


def stand_ins(config: StrategyConfig) -> list[StatedDeparture]:
    """The configuration's tools that stand in for what the paper runs (its ``tools:`` entries with ``paper:``)."""
    return [StatedDeparture(id=f"stand-in-{slug(name)}", text=f"{name} stands in for the paper's tool: {tool.paper.runs}",
                            paper_line=tool.paper.paper_line)
            for name, tool in config.tools.items() if tool.paper is not None]


def _evidence_departures(plan: PlannedRun, conditions: set[str]) -> list[StatedDeparture]:
    settings, mode = plan.config.retrieval, plan.retrieval_mode
    if settings is None:
        return []
    if mode == "off":
        return [_detected("retrieval-off", "retrieval is off (--retrieval off), so the evidence the configuration asks "
                                           "for is never gathered and every sample is checked without it")]
    found: list[StatedDeparture] = []
    if mode == "replay":
        found.append(_detected("retrieval-replay", "evidence is replayed from the evidence store: the samples see only what "
                                                   "an earlier run recorded, and a question never recorded gets nothing"))
    if settings.leakage.enabled:
        conditions.add("leakage_filter")
    providers = readiness(settings, mode, plan.env if plan.env is not None else os.environ)
    first = [p for p in providers if p.gathers_first]
    missing_first = [p for p in first if not p.ready]
    searching = [p.provider for p in providers if p.use == "web_search" and p.ready]
    if first and not any(p.ready for p in first):
        conditions.add("no_evidence")
        why = "; ".join(f"{p.provider}: {p.why}" for p in missing_first)
        uses = " and ".join(dict.fromkeys(USES[p.use] for p in missing_first))
        text = (f"the rows will gather no evidence before the agents start: no provider can find {uses} ({why}) and "
                "nothing else is gathered")
        if searching:
            text += (f"; {' and '.join(searching)} can answer only the searches the agents make themselves, so {uses} "
                     "are still missing")
        found.append(_detected("no-evidence", text))
    elif missing_first and any(p.use == "reverse_image" for p in missing_first) \
            and not any(p.ready for p in first if p.use == "reverse_image"):
        why = "; ".join(f"{p.provider}: {p.why}" for p in missing_first if p.use == "reverse_image")
        found.append(_detected("no-image-pages", f"the evidence will lack {USES['reverse_image']}: no reverse image search "
                                                 f"provider can run ({why})"))
    for p in providers:
        if p.ready or (p.gathers_first and "no_evidence" in conditions):
            continue
        if p.use == "reverse_image" and any(d.id == "no-image-pages" for d in found):
            continue
        fallback = [q for q in searching if q != p.provider] if p.use == "web_search" else []
        found.append(_detected(f"provider-{slug(p.provider)}", f"{p.provider} is listed but cannot run ({p.why})"
                               + (f"; web search falls back to {', '.join(fallback)}" if fallback else "")))
    return found


def _tool_departures(plan: PlannedRun) -> list[StatedDeparture]:
    from m3d_agents.tools.catalogue import default_registry

    registry = default_registry()
    used = plan.config.tools_used()
    found = []
    if plan.retrieval_mode == "off":
        found += [_detected(f"no-searcher-{slug(name)}", f"{name} searches the web, but retrieval is off for this run, so "
                            "every call will answer 'unavailable' (--retrieval live, or a retrieval block, turns it on)")
                  for name in used if registry.card(name).needs_network]
    if DETECTOR in used and not learned_detector_named(plan):
        found.append(_detected(f"no-weights-{slug(DETECTOR)}", f"{DETECTOR} has no weights (tools: {{{DETECTOR}: {{model: "
                               f"PATH}}}} or {MODEL_ENV}), so every call will answer 'unavailable'"))
    for name, tool in plan.config.tools.items():
        if tool.paper is None or not tool.paper.separate_model or name not in used:
            continue
        if plan.tools.get(name, ToolBinding()).backend is None:
            found.append(_detected(
                f"own-model-{slug(name)}", f"{name} runs on the agent's own model ({plan.backend_name}), where the paper runs "
                f"a separate one; tools: {{{name}: {{backend: NAME}}}} gives it its own", tool.paper.paper_line))
    return found


def asks_for_evidence(config: StrategyConfig) -> bool:
    """Whether the configuration's agents are meant to see evidence: it has a retrieval block, or one of its tools
    searches the web (a ReAct Wikipedia or Google action), which answers 'unavailable' when retrieval is off."""
    from m3d_agents.tools.catalogue import default_registry

    registry = default_registry()
    return config.retrieval is not None or any(registry.card(name).needs_network for name in config.tools_used())


def learned_detector_named(plan: PlannedRun) -> bool:
    """Whether the run names a learned detector's weights (its ``tools:`` block, the config file's, or the
    environment), which the image critic then reads instead of the fused CPU forensics."""
    from m3d_agents.tools.forensics.learned import MODEL_ENV, NAME

    env = plan.env if plan.env is not None else os.environ
    return bool(plan.tools.get(NAME, ToolBinding()).model or env.get(MODEL_ENV, "").strip())


def _answer_cap(plan: PlannedRun) -> list[StatedDeparture]:
    """A cap on answers that the backend sets below what a paper configuration asks (the paper's limit, or none)."""
    if plan.config.paper is None:
        return []
    budget = plan.config.call_budget()
    asked = budget.answer_tokens if budget is not None else None
    cap = plan.backend.answer_tokens(asked)
    if cap is None or cap == asked:
        return []
    embedded = plan.backend.shaping().answer_tokens
    source = "the embedded model's own cap, local.answer_tokens" if embedded == cap else "its max_tokens"
    paper = "sets no limit" if asked is None else f"allows {asked}"
    return [_detected("answer-cap", f"backend {plan.backend_name} cuts every answer at {cap} tokens ({source}), where "
                      f"{plan.config.paper}'s setting {paper}; each answer cut short is counted in the run's summary "
                      "(answers cut at the token cap)")]


def planned_departures(plan: PlannedRun) -> list[StatedDeparture]:
    """Every departure a run of ``plan`` will have that is known before it starts, the configuration's own first."""
    config = plan.config
    conditions = {"always"}
    detected = _evidence_departures(plan, conditions)
    detected += _tool_departures(plan)
    detected += _answer_cap(plan)
    seeing = [plan.seat_backend(name).has_vision for name in config.image_seats()]
    if not all(seeing):
        conditions.add("text_only")
    if any(seeing):
        conditions.add("vision")
    if config.paper is not None and not plan.backend.has_vision:
        detected.append(_detected(
            "text-only-backend", f"backend {plan.backend_name} ({plan.backend.model_name}) is text-only, so no agent sees "
            f"the images that {config.paper}'s models see"))
    conditions.add("learned_forgery" if learned_detector_named(plan) else "fused_forgery")
    listed = [StatedDeparture(id=d.id, text=d.text, paper_line=d.paper_line) for d in config.departures if d.when in conditions]
    return [*listed, *stand_ins(config), *detected]


class RunShares(BaseModel):
    """What a run's rows say about evidence and tools: the two columns ``m3d reproduce`` adds to every row."""

    samples: int = 0
    no_evidence: int = 0
    tools: dict[str, ToolUsage] = {}

    @property
    def no_evidence_share(self) -> float | None:
        return self.no_evidence / self.samples if self.samples else None

    @property
    def tool_calls(self) -> int:
        return sum(t.calls for t in self.tools.values())

    @property
    def unavailable_share(self) -> float | None:
        calls = self.tool_calls
        return sum(t.unavailable for t in self.tools.values()) / calls if calls else None


def evidence_items(verdict: Mapping[str, Any]) -> int:
    """The evidence items a sample ended with: the ids it cites or was shown, and the kept items it carries."""
    ids = set(verdict.get("evidence_ids") or [])
    ids |= {e.get("id") for e in verdict.get("evidence") or [] if isinstance(e, Mapping) and e.get("kept", True)}
    return len(ids - {None})


def run_shares(rows: Iterable[EvalRow]) -> RunShares:
    shares = RunShares()
    for row in rows:
        if row.status == "error" or row.verdict is None:
            continue
        shares.samples += 1
        shares.no_evidence += int(evidence_items(row.verdict) == 0)
        for name, usage in ((row.verdict.get("accounting") or {}).get("tools") or {}).items():
            total = shares.tools.setdefault(name, ToolUsage())
            total.calls += int(usage.get("calls", 0))
            total.unavailable += int(usage.get("unavailable", 0))
    return shares


def row_departures(shares: RunShares, asks_for_evidence: bool) -> list[StatedDeparture]:
    """What the finished samples show: samples with no evidence (where the configuration asks for evidence) and
    tool calls answered "unavailable", per tool."""
    found = []
    if asks_for_evidence and shares.no_evidence:
        found.append(_detected("samples-without-evidence", f"{shares.no_evidence} of {shares.samples} samples "
                               f"({100 * (shares.no_evidence_share or 0):.0f}%) ended with no evidence item"))
    for name, usage in sorted(shares.tools.items()):
        if usage.unavailable:
            found.append(_detected(f"unavailable-{slug(name)}", f"{name} answered 'unavailable' on {usage.unavailable} of "
                                   f"{usage.calls} calls ({100 * usage.unavailable / usage.calls:.0f}%)"))
    return found


def combined(*lists: Sequence[StatedDeparture]) -> list[StatedDeparture]:
    """The lists in order, one departure per id (a later list's replaces an earlier one's: the rows are newer than the plan)."""
    merged: dict[str, StatedDeparture] = {}
    for departures in lists:
        for departure in departures:
            merged[departure.id] = departure
    return list(merged.values())
