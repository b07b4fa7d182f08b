"""Trajectories of a run: every model call of every sample as it was sent and answered, one fsynced row each.

Recording happens where every strategy's calls pass, the metered client (a ledger with
``record_messages``), so the trajectories of a debate, a single check or the FactGuard loop are
all captured the same way. The batch runner asks this recorder for a ledger per sample and hands
the finished verdict back; images in the prompts are written once each to ``images/<sha256>.png``
in the run folder.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from debates.strategies.factguard.training.rewards import Outcome, RewardBreakdown, RewardConfig, trajectory_reward
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.diagnostics import Diagnostics
from debates.strategies.factguard.diagnostics import FactGuardDiagnostics
from m3d_agents.errors import InputError
from m3d_agents.labels import get_taxonomy
from m3d_agents.safe_files import AppendOnlyFile, OwnedFolder, read_text_nofollow
from m3d_agents.safe_json import loads_bounded
from m3d_agents.sample import Sample
from m3d_agents.verdict import Verdict

TRAJECTORIES = "trajectories.jsonl"


class RecordedCall(BaseModel):
    agent: str
    role: str
    messages: list[dict[str, Any]]
    completion: str
    options: dict[str, Any] = Field(default_factory=dict)


class TrajectoryRow(BaseModel):
    sample_id: str
    config: str
    taxonomy: str
    gold: str | None
    gold_binary: str | None
    label: str | None
    predicted_binary: str | None
    abstained: bool
    abstain_reason: str | None = None
    diagnostics: Diagnostics | None = Field(
        None, description="the verdict's diagnostics; a row written before they were typed is read into its strategy's model"
    )
    calls: list[RecordedCall]
    reward: RewardBreakdown | None = None


def binary(label: str | None, taxonomy: str) -> str | None:
    if label is None:
        return None
    return "fake" if get_taxonomy(taxonomy).is_misinformation(label) else "real"


def outcome_of(row: TrajectoryRow) -> Outcome | None:
    """The reward's view of a recorded run: FactGuard's own format check and tool use where it made them;
    another strategy's answer is well formed when it gave one, and it used no tool the reward counts."""
    if row.gold_binary is None:
        return None
    checked = row.diagnostics if isinstance(row.diagnostics, FactGuardDiagnostics) else None
    well_formed = checked.format_ok if checked is not None else not row.abstained
    return Outcome(predicted=row.predicted_binary, gold=row.gold_binary, well_formed=well_formed,
                   used_tool=checked.used_tools if checked is not None else False,
                   tool_answered=checked.tool_answered if checked is not None else False)


class TrajectoryRecorder:
    """Gives the batch runner a recording ledger per sample and appends each sample's trajectory."""

    def __init__(self, run_dir: Path, reward: RewardConfig | None = None) -> None:
        self.run_dir = run_dir
        self.path = run_dir / TRAJECTORIES
        self.reward = reward or RewardConfig()

    def ledger(self) -> UsageLedger:
        return UsageLedger(record_messages=True)

    def write(self, sample: Sample, verdict: Verdict, ledger: UsageLedger) -> None:
        folder = OwnedFolder(self.run_dir)
        for sha, data in ledger.images.items():
            name = f"images/{sha}.png"
            if not folder.lexists(name):
                folder.write(name, data)
        row = TrajectoryRow(
            sample_id=sample.id, config=verdict.config, taxonomy=sample.taxonomy, gold=sample.gold_label,
            gold_binary=binary(sample.gold_label, sample.taxonomy), label=verdict.label,
            predicted_binary=binary(verdict.label, verdict.taxonomy), abstained=verdict.abstained,
            abstain_reason=verdict.abstain_reason,
            diagnostics=verdict.diagnostics,
            calls=[RecordedCall(agent=e.agent, role=e.role, messages=e.messages, completion=e.completion, options=e.options)
                   for e in ledger.exchanges],
        )
        outcome = outcome_of(row)
        row.reward = trajectory_reward(outcome, self.reward) if outcome is not None else None
        append_row(self.path, row)


def append_row(path: Path, row: BaseModel) -> None:
    """One write and one fsync per row, as the results file does, so a crash leaves whole rows; every
    string redacted (a server that echoes the key in its answers puts it in the recorded completions)."""
    with AppendOnlyFile(path) as log:
        log.append_json(row)


def read_trajectories(run_dir: Path) -> list[TrajectoryRow]:
    """Every trajectory of a run (the last row wins for a sample run twice); a torn last line is ignored."""
    path = run_dir / TRAJECTORIES
    if not os.path.lexists(path):
        raise InputError("run", f"{run_dir} has no {TRAJECTORIES}; run m3d evaluate with --record-trajectories")
    rows: dict[str, TrajectoryRow] = {}
    lines = read_text_nofollow(path).split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = TrajectoryRow.model_validate(loads_bounded(line))
        except ValueError as exc:
            if number >= len(lines) - 1:
                break
            raise InputError(f"{TRAJECTORIES}:{number}", f"not a trajectory row ({exc})") from exc
        rows[row.sample_id] = row
    return list(rows.values())
