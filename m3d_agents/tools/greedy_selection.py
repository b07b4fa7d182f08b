"""Greedy tool selection in the manner of T2Agent (its Alg. 2): grow a tool set while dev accuracy improves.

The evaluation is a callable so that any configuration (a fused forensic score, a whole debate, a
tree search) can be tuned with the same procedure. Three readings, because the paper's text and
its algorithm differ:

- ``compare_to="running"`` (default): a candidate is kept when the set with it beats the best
  accuracy so far, the combined, incremental effect the paper's text describes;
- ``compare_to="baseline"``: Alg. 2 as printed, where ``Acc_baseline`` is computed once from the
  base set and never updated, so every candidate is compared with the base set's accuracy;
- ``mode="independent"``: the OctoTools contrast, each candidate judged alone on top of the
  base set, and every one that helps kept.
"""

from __future__ import annotations

from typing import Callable, Literal, Sequence

from pydantic import BaseModel

from m3d_agents.errors import InputError

Evaluate = Callable[[tuple[str, ...]], float]
CompareTo = Literal["running", "baseline"]
Mode = Literal["greedy", "independent"]


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
    compare_to: CompareTo = "running"
    mode: Mode = "greedy"


def greedy_select(
    base: Sequence[str],
    candidates: Sequence[str],
    evaluate: Evaluate,
    min_gain: float = 0.0,
    on_step: Callable[[SelectionStep], None] | None = None,
    *,
    compare_to: CompareTo = "running",
    mode: Mode = "greedy",
) -> SelectionResult:
    """Try each candidate once, in order; keep it when accuracy rises by more than ``min_gain``.

    ``accuracy`` of the result is measured on exactly the chosen set (evaluated once more when no
    step evaluated that set).
    """
    if not base:
        raise InputError("base", "the base tool set is empty; start from at least one tool")
    repeated = sorted(set(base) & set(candidates))
    if repeated:
        raise InputError("candidates", f"{', '.join(repeated)} already in the base set")
    measured: dict[tuple[str, ...], float] = {}

    def accuracy_of(tools: tuple[str, ...]) -> float:
        if tools not in measured:
            measured[tools] = float(evaluate(tools))
        return measured[tools]

    chosen = tuple(base)
    base_accuracy = best = accuracy_of(chosen)
    steps: list[SelectionStep] = []
    for tool in candidates:
        trial = (*base, tool) if mode == "independent" else (*chosen, tool)
        accuracy = accuracy_of(trial)
        reference = best if (mode == "greedy" and compare_to == "running") else base_accuracy
        kept = accuracy > reference + min_gain
        step = SelectionStep(tool=tool, tools=trial, accuracy=accuracy, kept=kept)
        steps.append(step)
        if on_step is not None:
            on_step(step)
        if kept:
            chosen = (*chosen, tool)
            best = max(best, accuracy)
    return SelectionResult(base=tuple(base), base_accuracy=base_accuracy, steps=steps, chosen=chosen,
                           accuracy=accuracy_of(chosen), compare_to=compare_to, mode=mode)
