"""The results file of a run: one JSON line per finished sample, appended and fsynced one by one.

Each row is written with a single ``write`` on a file opened for appending, then fsynced, so a
crash at any point leaves every earlier row intact and at most one torn line at the end, which
:func:`read_rows` cuts off before a resumed run appends to the file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from debates.fidelity import StatedDeparture
from m3d_agents.datasets.base import LoadReport
from m3d_agents.datasets.subsets import Subset
from m3d_agents.errors import InputError, one_line
from m3d_agents.diagnostics import DIAGNOSTICS, Diagnostics
from m3d_agents.safe_json import loads_bounded
from m3d_agents.safe_files import AppendOnlyFile, UnsafeFile, open_nofollow, read_bytes_nofollow, read_text_nofollow, write_failed
from m3d_agents.verdict import Verdict

Status = Literal["ok", "abstained", "error"]


RESULTS = "results.jsonl"
MANIFEST = "run.json"


class Escalation(BaseModel):
    """How often a planner (AgentM3D's) sent a sample to best-of-N: AgentM3D reports 69.1% on
    MMFakeBench and 77.2% on its Combined benchmark (paper line 228)."""

    planned: int = Field(description="finished samples whose planner was asked")
    escalated: int = Field(description="of those, the samples sent to best-of-N (an unreadable plan included)")
    share: float = Field(description="escalated / planned")

    def line(self) -> str:
        return f"escalated to best-of-N: {100 * self.share:.1f}% ({self.escalated} of {self.planned} samples the planner saw)"


class RunManifest(BaseModel):
    """What a run is; a resumed run must match it, so rows of two different runs never mix."""

    config: str
    dataset: str
    dataset_options: dict[str, str] = Field(default_factory=dict)
    backend: str
    seed: int
    taxonomy: str
    created: str = ""
    load_report: LoadReport | None = None
    subset: Subset | None = Field(None, description="how the run chose its samples (first, random or balanced N); None: "
                                  "all of them in the data set's order, as runs did before subsets had a name")
    retrieval: str | None = Field(None, description="where the evidence came from: live, record, replay or off")
    escalation: Escalation | None = Field(
        None, description="a run with a planner: how often it escalated to best-of-N, written with the run's report")
    departures: list[StatedDeparture] = Field(
        default_factory=list, description="how this run departs from the paper its configuration is named after: "
        "the configuration's list and those detected before the run, then those its rows show (debates.eval.score.departures)"
    )

    def identity(self) -> dict[str, Any]:
        identity = {k: getattr(self, k) for k in ("config", "dataset", "dataset_options", "backend", "seed")}
        chosen = self.subset.identity() if self.subset is not None else None
        if chosen is not None:
            identity["subset"] = chosen
        return identity



MANIFEST_LIMIT = 16 * 1024 * 1024
"""A run.json is a few kilobytes; a larger file is not a manifest."""


def read_manifest(path: Path) -> RunManifest:
    """The manifest at ``path`` (never read through a link); one error naming the file if it is not one."""
    try:
        return RunManifest.model_validate(loads_bounded(read_text_nofollow(path, MANIFEST_LIMIT)))
    except UnsafeFile:
        raise
    except ValidationError as exc:
        raise InputError(str(path), f"is not the manifest of a run ({InputError.from_validation(exc)})") from None
    except (OSError, ValueError) as exc:
        why = exc.problem if isinstance(exc, InputError) else getattr(exc, "strerror", None) or type(exc).__name__
        raise InputError(str(path), f"is not the manifest of a run ({why})") from None


class RowError(BaseModel):
    type: str
    message: str
    field: str | None = None


class EvalRow(BaseModel):
    """One sample's outcome, with what the metrics need at the top level and the full verdict below."""

    sample_id: str
    index: int
    seed: int
    status: Status
    taxonomy: str
    gold: str | None = None
    label: str | None = None
    gold_misinformation: bool | None = None
    is_misinformation: bool | None = None
    confidence: float | None = None
    abstain_reason: str | None = None
    error: RowError | None = None
    latency_s: float = 0.0
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_hits: int = 0
    model_s: float | None = Field(None, description="the backends' time answering this sample's calls, summed over them "
                                  "(None in rows written before it was kept here)")
    wait_s: float | None = Field(None, description="the time this sample's calls waited for a backend slot, summed over "
                                 "them (None in rows written before it was measured)")
    cut_answers: int = Field(0, description="answers the model stopped at their token cap (finish_reason length)")
    cost_usd: float | None = 0.0
    config: str
    backend: str
    verdict: dict[str, Any] | None = Field(None, description="the full Verdict, transcript included")
    gold_evidence: int | None = Field(
        None, ge=0, description="evidence items the data set's human fact-check cites for the sample (RW-Post's), the "
        "difficulty proxy of AgentFact's App. D; None where the data set gives none"
    )

    def diagnostics(self) -> Diagnostics | None:
        """How this row's verdict was reached, typed: a row written before diagnostics were typed is read
        into its strategy's model (or kept untyped), so an old run folder reports like a new one."""
        raw = (self.verdict or {}).get("diagnostics")
        return None if raw is None else DIAGNOSTICS.validate_python(raw)

    @property
    def scored(self) -> bool:
        """Counts towards accuracy: it has a gold label. A failed sample counts as not correct."""
        return self.gold is not None

    @property
    def correct(self) -> bool:
        return self.status == "ok" and self.label == self.gold

    @property
    def from_cache(self) -> bool:
        """Every model call of the sample was answered from the response cache: its time is no model's."""
        return 0 < self.model_calls <= self.cache_hits


class ResultsFile:
    """Append-only JSONL of :class:`EvalRow` (or any other row model), one fsync per row, never through a link."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._log = AppendOnlyFile(path)

    def open(self) -> None:
        self._log.open()

    def append(self, row: BaseModel) -> None:
        # Every row is redacted on its way out, so no key reaches results.jsonl or the report built
        # from it, whatever a server echoed into an error or an answer.
        self._log.append_json(row)

    def close(self) -> None:
        self._log.close()


def read_rows(path: Path, repair: bool = False) -> tuple[list[EvalRow], bool]:
    """Every complete row, and whether a torn last line was found (and, with ``repair``, cut off).

    A bad line anywhere but at the end cannot come from an interrupted append, so it is an error.
    Where a sample id occurs more than once (a failed sample retried), the last row wins.
    """
    if not os.path.lexists(path):
        return [], False
    data = read_bytes_nofollow(path)
    lines = data.split(b"\n")
    rows: dict[str, EvalRow] = {}
    offset = 0
    torn = False
    for number, line in enumerate(lines, start=1):
        is_last = number == len(lines)
        if not line.strip():
            offset += len(line) + 1
            continue
        try:
            if is_last:
                raise ValueError("no newline at the end")
            row = EvalRow.model_validate(loads_bounded(line))
        except (ValueError, ValidationError) as exc:
            if is_last or (number == len(lines) - 1 and not lines[-1]):
                torn = True
                break
            why = str(InputError.from_validation(exc)) if isinstance(exc, ValidationError) else str(exc)
            raise InputError(f"{path}:{number}", f"not a result row ({one_line(why)}); the file was changed by hand") from None
        rows[row.sample_id] = row
        offset += len(line) + 1
    if torn and repair:
        fd = open_nofollow(path, os.O_WRONLY)
        try:
            os.ftruncate(fd, offset)
            os.fsync(fd)
        except OSError as exc:
            raise write_failed(path, exc) from None
        finally:
            os.close(fd)
    return list(rows.values()), torn


def row_from_verdict(verdict: Verdict, *, index: int, seed: int, gold: str | None, gold_mis: bool | None,
                     latency_s: float, cost_usd: float | None, config: str, backend: str) -> EvalRow:
    acc = verdict.accounting
    return EvalRow(
        sample_id=verdict.sample_id, index=index, seed=seed, status="abstained" if verdict.abstained else "ok",
        taxonomy=verdict.taxonomy, gold=gold, label=verdict.label, gold_misinformation=gold_mis,
        is_misinformation=verdict.is_misinformation, confidence=verdict.confidence,
        abstain_reason=verdict.abstain_reason, latency_s=round(latency_s, 4), model_calls=acc.model_calls,
        prompt_tokens=acc.prompt_tokens, completion_tokens=acc.completion_tokens, cache_hits=acc.cache_hits,
        model_s=acc.latency_s, wait_s=acc.wait_s, cut_answers=acc.cut_answers, cost_usd=cost_usd, config=config,
        backend=verdict.backend or backend, verdict=verdict.model_dump(mode="json"),
    )
