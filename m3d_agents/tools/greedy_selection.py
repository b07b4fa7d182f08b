"""Greedy tool selection in the manner of T2Agent: grow a tool set while dev accuracy improves.

The evaluation is a callable so that any configuration (a fused forensic score, a whole debate)
can be tuned with the same procedure.
"""

from __future__ import annotations

from typing import Callable, Sequence

from pydantic import BaseModel

from m3d_agents.errors import InputError

Evaluate = Callable[[tuple[str, ...]], float]


class SelectionStep(BaseModel):
    tool: str
    tools: tuple[str, ...]
    accuracy: float
    kept: bool


class SelectionResult(BaseModel):
    base: tuple[str, ...]
    base_accuracy: float
    steps: list[SelectionStep]
    chosen: tuple[str, ...]
    accuracy: float


def greedy_select(
    base: Sequence[str],
    candidates: Sequence[str],
    evaluate: Evaluate,
    min_gain: float = 0.0,
    on_step: Callable[[SelectionStep], None] | None = None,
) -> SelectionResult:
    """Try each candidate once, in order; keep it when accuracy rises by more than ``min_gain``."""
    if not base:
        raise InputError("base", "the base tool set is empty; start from at least one tool")
    repeated = sorted(set(base) & set(candidates))
    if repeated:
        raise InputError("candidates", f"{', '.join(repeated)} already in the base set")
    chosen = tuple(base)
    best = base_accuracy = float(evaluate(chosen))
    steps: list[SelectionStep] = []
    for tool in candidates:
        trial = (*chosen, tool)
        accuracy = float(evaluate(trial))
        kept = accuracy > best + min_gain
        step = SelectionStep(tool=tool, tools=trial, accuracy=accuracy, kept=kept)
        steps.append(step)
        if on_step is not None:
            on_step(step)
        if kept:
            chosen, best = trial, accuracy
    return SelectionResult(base=tuple(base), base_accuracy=base_accuracy, steps=steps, chosen=chosen, accuracy=best)
