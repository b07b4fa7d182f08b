"""How a configuration named after a paper says where it departs from that paper, as data.

A configuration that reproduces a paper names it (``paper:``) and lists its known departures
(``departures:``): each has a short id, one sentence in our words, and the paper line it departs
from. Some departures hold only in some runs (``when``): the ablation a run becomes when it
gathers no evidence, a leakage filter the paper did not have. A run adds the departures it
detects (a provider without a key, a tool on the agent's own model, samples with no evidence ...;
see :mod:`debates.eval.score.departures`), and ``m3d reproduce``, ``m3d evaluate``'s report and
``run.json`` print them all, so a table is never read as the paper's setting when it is not.

A tool that stands in for what the paper ran (our ``physics_check`` for T2Agent's LLaVA-34B
counterfactual detector) says so in the configuration's ``tools:`` block (:class:`PaperTool`).
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

PAPER_LINES = r"^\d+(-\d+)?(, ?\d+(-\d+)?)*$"
"""``203``, ``201-207`` or ``66-67, 71``: lines of the paper's text in ``shared/papers``."""

When = Literal["always", "no_evidence", "leakage_filter", "fused_forgery", "learned_forgery", "text_only", "vision"]


class Departure(BaseModel):
    """One known way a configuration differs from the paper it is named after."""

    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$", description="a short slug, unique within the configuration")
    text: str = Field(min_length=10, max_length=400, description="one sentence in our words: what differs from the paper")
    paper_line: str = Field(pattern=PAPER_LINES, description="the lines of the paper's text that this departs from (203, 201-207)")
    when: When = Field(
        "always", description="always: every run departs so; no_evidence: only a run that gathers no evidence (no "
        "provider can run); leakage_filter: only a run whose leakage filter is on; fused_forgery / learned_forgery: "
        "only a run whose image critic reads the fused CPU forensics (no learned detector's weights named) / a learned "
        "detector; text_only / vision: only a run where a seat that reads images (the configuration's image_seats: "
        "AgentFact's visual analyst; else every agent) is on a backend that cannot / can see them"
    )


class PaperTool(BaseModel):
    """What the paper runs where the configuration runs one of our tools."""

    model_config = ConfigDict(extra="forbid")

    runs: str = Field(min_length=3, description="the paper's tool as the paper names it: 'LLaVA-34B asked about "
                      "counterfactual scenes', 'Baidu's entity recognition API', 'PatchCraft'")
    paper_line: str = Field(pattern=PAPER_LINES, description="where the paper names it")
    separate_model: bool = Field(
        False, description="the paper's tool is a model of its own, not the agent's backbone: a run that leaves this "
        "tool on the agent's backend states that as a departure (tools: {NAME: {backend: ...}} lifts it)"
    )


Origin = Literal["configuration", "detected"]


class StatedDeparture(BaseModel):
    """A departure as a run states it: listed by the configuration, or detected from the run's settings and rows."""

    id: str
    text: str
    paper_line: str | None = Field(None, description="the paper's lines, when the departure names them")
    origin: Origin = Field("configuration", description="configuration: listed in the YAML; detected: found by the run")

    def line(self) -> str:
        where = f" (paper line {self.paper_line})" if self.paper_line else ""
        return f"[{self.id}] {self.text.rstrip('.')}{where}"


def slug(text: str) -> str:
    """An id made of a tool's or provider's name (``physics_check`` -> ``physics-check``)."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
