"""Where a training run departs from the paper's training (App. A.1, §3.5), stated before its first step.

The paper fine-tunes every weight of Qwen2.5-VL-7B in BF16 on 8 H100s (lines 183, 333) and caps
prompts at 16,384 tokens (line 339); its tool reward penalises every ineffective call (line 143).
A run on one GPU, on a CPU, or with our options differs, and ``m3d train sft|grpo`` prints how
before it trains, with the samples the prompt cap left out named, and saves the list beside the
trained weights.
"""

from __future__ import annotations

from typing import Mapping

from debates.fidelity import StatedDeparture
from debates.strategies.factguard.training.rewards import RewardConfig
from debates.strategies.factguard.training.scale import ScaleSettings

PAPER_PROMPT_CAP = 16384
NAMED = 5
"""Samples left out that a departure names; the rest are counted."""


def training_departures(scale: ScaleSettings, dtype: str, *, reward: RewardConfig | None = None, prompt_cap: int | None = None,
                        left_out: Mapping[str, int] | None = None, samples: int = 0) -> list[StatedDeparture]:
    """The departures of an SFT run (``reward`` None) or a GRPO run, in the dtype it trains in."""
    found = []
    if scale.lora is not None:
        found.append(StatedDeparture(
            id="lora", origin="detected", paper_line="183, 333",
            text=f"A LoRA adapter (rank {scale.lora.r}, alpha {scale.lora.alpha}) is trained instead of every weight (ours, "
                 "for one GPU), where the paper fine-tunes the whole model on 8 H100s"))
    if dtype != "bf16":
        why = "no GPU with bf16 here" if scale.dtype == "auto" else f"--dtype {dtype}"
        found.append(StatedDeparture(
            id="dtype", origin="detected", paper_line="333",
            text=f"Weights and compute are {dtype} ({why}), where the paper trains in BF16 mixed precision"))
    if left_out:
        named = ", ".join(f"{sample} ({tokens} tokens)" for sample, tokens in list(left_out.items())[:NAMED])
        more = f" and {len(left_out) - NAMED} more" if len(left_out) > NAMED else ""
        cap = prompt_cap or PAPER_PROMPT_CAP
        found.append(StatedDeparture(
            id="prompt-cap-leaves-out", origin="detected", paper_line="183, 339",
            text=f"{len(left_out)} of {samples} samples are left out of training, their first prompt over the "
                 f"{cap:,}-token cap{'' if cap == PAPER_PROMPT_CAP else f' (the paper: {PAPER_PROMPT_CAP:,})'}, where the paper "
                 f"caps prompts without saying what becomes of longer ones: {named}{more}"))
    if reward is not None and reward.tool_use == "answered":
        found.append(StatedDeparture(
            id="tool-reward-answered-calls", origin="detected", paper_line="143",
            text="R_tool counts only tool calls that ran and answered (reward.tool_use: answered, ours), so a refused, "
                 "failed or 'unavailable' call costs nothing, where the paper penalises ineffective tool use"))
    return found
