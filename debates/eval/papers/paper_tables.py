"""The registry of the papers' tables that ``m3d reproduce`` runs: one YAML file per table in ``debates/eval/papers/tables/``.

A table names its paper, where its numbers stand (table and page), the data sets it reports on
(kind, split, size), its metrics and scale, and its rows: each paper row with the configuration of
ours that reproduces it (or none, for a system we do not have), the backbone the paper ran it on,
and the numbers the paper reports, per data set.

A number that could not be read from the paper is stored as null, never guessed, and the row (or
the table) says where it is and why it is missing; a number the paper does not report at all
(a setting of ours with no counterpart) is null with that reason instead. The printed table shows
the difference.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from debates.eval.papers.table_figures import METRICS
from m3d_agents.datasets import DATASETS
from m3d_agents.errors import InputError
from m3d_agents.safe_yaml import load_yaml

TABLE_ID = re.compile(r"[a-z0-9][a-z0-9-]*")


class Citation(BaseModel):
    model_config = ConfigDict(extra="forbid")

    table: str = Field(description="the table as the paper numbers it, e.g. 'Table 1' or 'Table III'")
    page: int | None = Field(None, description="the page of the paper's PDF that holds the table")
    page_note: str = Field("", description="why the page is not given, when it is not")
    source: str = Field(description="what the numbers were transcribed from")

    @model_validator(mode="after")
    def _page_or_why(self) -> "Citation":
        if self.page is None and not self.page_note.strip():
            raise ValueError("give the table's page, or say in page_note why it is not known")
        return self

    def line(self) -> str:
        page = f"p. {self.page}" if self.page is not None else f"page not known ({self.page_note})"
        return f"{self.table}, {page}; numbers from {self.source}"


class Missing(BaseModel):
    """Why some numbers of a row (or of every row of a table) are null."""

    model_config = ConfigDict(extra="forbid")

    reason: Literal["not_transcribed", "not_reported"]
    note: str = Field(min_length=1, description="where the number is (table, page) and why it is not here")

    def shown(self) -> str:
        return "n/a (not transcribed)" if self.reason == "not_transcribed" else "n/a (not in the paper)"


class DatasetSetting(BaseModel):
    """The paper's setting on one data set: the split and how many samples it scored."""

    model_config = ConfigDict(extra="forbid")

    split: str | None = None
    samples: int | None = Field(None, gt=0, description="how many samples the paper scored, when it says")
    note: str = ""


class PaperRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=TABLE_ID.pattern)
    label: str = Field(description="the row as the paper names it")
    config: str | None = Field(description="our configuration that reproduces the row; null for a system we do not have")
    backbone: str | None = Field(None, description="the model the paper ran the row on; null when not transcribed")
    numbers: dict[str, dict[str, float | None]] = Field(
        default_factory=dict, description="per data set kind, per metric: the paper's figure, on the table's scale")
    missing: Missing | None = None
    escalation: dict[str, float] = Field(
        default_factory=dict, description="per data set kind: the share of samples the row's planner escalated to "
        "best-of-N, as the paper reports it, on the table's scale (AgentM3D, paper line 228)")
    note: str = ""


class PaperTable(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(pattern=TABLE_ID.pattern)
    paper: str
    paper_title: str
    title: str
    citation: Citation
    taxonomy: str = Field(description="the labels the paper scores, as our taxonomy names them")
    scale: Literal["percent", "fraction"]
    metrics: list[str] = Field(min_length=1)
    datasets: dict[str, DatasetSetting] = Field(min_length=1)
    backbone: str | None = Field(None, description="the paper's backbone for the table, when one backbone runs every row")
    missing: Missing | None = Field(None, description="why numbers are null in every row that gives no reason of its own")
    notes: list[str] = Field(default_factory=list)
    rows: list[PaperRow] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> "PaperTable":
        unknown = [m for m in self.metrics if m not in METRICS]
        if unknown:
            raise ValueError(f"unknown metrics {unknown}; known: {', '.join(METRICS)}")
        ids = [row.id for row in self.rows]
        if len(set(ids)) != len(ids):
            raise ValueError(f"row ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
        for row in self.rows:
            for kind in row.escalation:
                if kind not in self.datasets:
                    raise ValueError(f"row {row.id!r} has an escalation for {kind!r}, which is not one of the table's data sets")
            for kind, figures in row.numbers.items():
                if kind not in self.datasets:
                    raise ValueError(f"row {row.id!r} has numbers for {kind!r}, which is not one of the table's data sets")
                extra = set(figures) - set(self.metrics)
                if extra:
                    raise ValueError(f"row {row.id!r} has numbers for {sorted(extra)}, which are not the table's metrics")
            if any(value is None for kind in self.datasets for value in self.figures(row, kind).values()) \
                    and row.missing is None and self.missing is None:
                raise ValueError(f"row {row.id!r} lacks numbers; say why under missing (where they are, why not here)")
        return self

    def figures(self, row: PaperRow, kind: str) -> dict[str, float | None]:
        """The paper's figure of ``row`` on data set ``kind`` for every metric of the table (null where absent)."""
        given = row.numbers.get(kind, {})
        return {metric: given.get(metric) for metric in self.metrics}

    def missing_of(self, row: PaperRow) -> Missing | None:
        return row.missing or self.missing

    def configs(self) -> list[str]:
        """Our configurations that the table runs, in row order, each once."""
        return list(dict.fromkeys(row.config for row in self.rows if row.config is not None))

    def backbones(self) -> list[str]:
        return list(dict.fromkeys(b for b in [self.backbone, *(row.backbone for row in self.rows)] if b))

    def without_loader(self) -> list[str]:
        """The table's data sets that no loader of this build reads: their numbers are stored for
        comparison, but no row can run on them (AgentM3D's Combined mix, for one)."""
        return [kind for kind in self.datasets if kind not in DATASETS]


def _folder() -> Traversable:
    return resources.files("debates.eval.papers").joinpath("tables")


def table_names() -> list[str]:
    return sorted(p.name[: -len(".yaml")] for p in _folder().iterdir() if p.name.endswith(".yaml"))


@lru_cache(maxsize=None)
def load_table(name: str) -> PaperTable:
    """A built-in table by id; an error listing the known ones when there is no such table."""
    if not TABLE_ID.fullmatch(name) or name not in table_names():
        raise InputError("table", f"unknown table {name!r}; known: {', '.join(table_names())}")
    origin = f"debates/eval/papers/tables/{name}.yaml"
    data = load_yaml(_folder().joinpath(f"{name}.yaml").read_text(encoding="utf-8"), origin)
    try:
        table = PaperTable.model_validate(data)
    except ValidationError as exc:
        raise InputError.from_validation(exc, origin, default_field="table") from None
    if table.id != name:
        raise InputError("table", f"{origin} holds table {table.id!r}; the file and the id must agree")
    return table


def all_tables() -> list[PaperTable]:
    return [load_table(name) for name in table_names()]


def missing_configs(table: PaperTable, available: list[str]) -> list[str]:
    """The table's configurations that this build lacks (one still being written, or renamed)."""
    return [config for config in table.configs() if config not in available]


def check_runnable(table: PaperTable, available: list[str], kind: str | None = None) -> None:
    """Refuse a table whose configurations this build lacks, or (``kind`` given) a data set it has no loader for."""
    if kind is not None and kind in table.without_loader():
        raise InputError("dataset", f"{table.id}'s {kind} data set has no loader in this build, so no row can run on it: "
                                    f"{' '.join(table.datasets[kind].note.split())}")
    missing = missing_configs(table, available)
    if missing:
        rows = [row.id for row in table.rows if row.config in missing]
        raise InputError("table", f"{table.id} needs configuration{'s' if len(missing) > 1 else ''} "
                                  f"{', '.join(missing)} (rows {', '.join(rows)}), which this build lacks")
