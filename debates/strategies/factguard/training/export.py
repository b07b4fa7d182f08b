"""SFT data from recorded trajectories, with the paper's rule filter (FactGuard §3.4).

A trajectory is kept when its reasoning structure is intact, its tool calls were valid and its
final answer matches the gold label; every drop is counted by reason, and a review sample is
written for the manual pass the paper describes. "Invalid tool action" (the paper's rule) covers a
call refused for its budget, a call whose arguments the tool could not use (a window past the
video's end) and a call to a tool that could not run for the sample (no video file, no web
search): a demonstration that teaches a call which cannot work is not kept. Each kept trajectory
becomes one conversation per agent: a model call whose prompt and answer are the beginning of that
agent's next call is part of it, not a row of its own. Tool results stay ``user`` messages, the role
inference and GRPO send them in, so SFT trains on the prompts the model will get. Two formats:

* ``hf``: TRL/Hugging Face conversational rows, ``{"messages": [...], "images": [...]}``, with
  ``{"type": "image"}`` placeholders;
* ``llamafactory``: the same with text contents and an ``<image>`` placeholder per image.

A teacher run's gold hint is removed from every message; the student-facing prompt is what remains.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel

from debates.strategies.factguard.training.trajectories import TrajectoryRow, read_trajectories
from debates.strategies.factguard.diagnostics import FactGuardDiagnostics
from m3d_agents.safe_files import OwnedFolder

Format = Literal["hf", "llamafactory"]


class ExportReport(BaseModel):
    trajectories: int
    kept: int
    rows: int
    dropped: dict[str, int]
    out: str
    review: str | None


def drop_reason(row: TrajectoryRow) -> str | None:
    """Why the rule filter drops a trajectory, or None to keep it.

    A trajectory of a strategy that records no FactGuard format check (a debate, a single check) is
    dropped as ``no_format_check``: the filter cannot tell whether its structure is intact, and
    passing it unread would put unchecked rows in the SFT data."""
    if not row.calls:
        return "no_model_calls"
    if row.gold_binary is None:
        return "no_gold_label"
    checked = row.diagnostics
    if not isinstance(checked, FactGuardDiagnostics):
        return "no_format_check"
    if row.abstained or row.predicted_binary is None or not checked.format_ok:
        return "malformed"
    if any(turn.error or turn.lenient for turn in checked.agent_turns):
        return "malformed"
    if checked.tool_refusals:
        return "invalid_tool_action"
    stats = checked.tool_stats
    if any(count for name, count in stats.items() if name.endswith(".errors")):
        return "invalid_tool_action"
    if any(count for name, count in stats.items() if name.endswith(".unavailable")):
        return "unavailable_tool"
    if row.predicted_binary != row.gold_binary:
        return "wrong_answer"
    return None


def conversations(row: TrajectoryRow) -> list[list[dict[str, Any]]]:
    """One conversation per agent: calls continued by a later call of the same agent are folded into it."""
    full = [[*call.messages, {"role": "assistant", "content": call.completion, "source": call.agent}] for call in row.calls]
    out = []
    for i, conversation in enumerate(full):
        agent = row.calls[i].agent
        continued = any(
            row.calls[j].agent == agent and _strip_sources(row.calls[j].messages[: len(conversation)]) == _strip_sources(conversation)
            for j in range(i + 1, len(row.calls))
        )
        if not continued:
            out.append(conversation)
    return out


def _strip_sources(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in m.items() if k != "source"} for m in messages]


def _unhinted(text: str, hint: str) -> str:
    return text.replace(f"\n\n{hint}", "").replace(hint, "") if hint else text


def export_messages(conversation: list[dict[str, Any]], run_dir: Path, fmt: Format, hint: str) -> tuple[list[dict[str, Any]], list[str]]:
    images: list[str] = []
    out: list[dict[str, Any]] = []
    for message in conversation:
        role = message["role"]
        content = message["content"]
        if isinstance(content, str):
            exported: Any = _unhinted(content, hint)
        else:
            parts: list[dict[str, Any]] = []
            for part in content:
                if part["type"] == "image":
                    images.append(str(run_dir / part["image"]))
                    parts.append({"type": "image"})
                else:
                    parts.append({"type": "text", "text": _unhinted(part["text"], hint)})
            exported = parts
            if fmt == "llamafactory":
                exported = "".join("<image>" if p["type"] == "image" else p["text"] for p in parts)
        out.append({"role": role, "content": exported})
    return out, images


def export_sft(run_dir: Path, out: Path, fmt: Format = "hf", review: int = 20, seed: int = 0) -> ExportReport:
    trajectories = read_trajectories(run_dir)
    dropped: dict[str, int] = {}
    written: list[dict[str, Any]] = []
    kept = 0
    for row in trajectories:
        reason = drop_reason(row)
        if reason is not None:
            dropped[reason] = dropped.get(reason, 0) + 1
            continue
        kept += 1
        hint = row.diagnostics.teacher_hint if isinstance(row.diagnostics, FactGuardDiagnostics) else ""
        for conversation in conversations(row):
            messages, images = export_messages(conversation, run_dir, fmt, hint)
            written.append({
                "messages": messages, "images": images, "sample_id": row.sample_id, "gold": row.gold_binary,
                "reward": row.reward.model_dump() if row.reward else None,
            })
    folder = OwnedFolder(out.parent).create()
    folder.write_jsonl(out.name, written)
    review_path = None
    if review and written:
        review_path = out.with_name(out.stem + ".review.jsonl")
        chosen = random.Random(seed).sample(written, min(review, len(written)))
        folder.write_jsonl(review_path.name, chosen)
    return ExportReport(trajectories=len(trajectories), kept=kept, rows=len(written), dropped=dropped, out=str(out),
                        review=str(review_path) if review_path else None)
