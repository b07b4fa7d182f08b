"""The settings of the FactGuard video agent; defaults the paper does not state are marked as ours."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator

from debates.strategy import CallBudget, StrategyConfig, configuration, strategy_field
from m3d_agents.config_types import MaxTokens, Temperature

KNOWN_TOOLS = ("fact_probe", "clip_scout")


@configuration("factguard")
class FactGuardConfig(StrategyConfig):
    strategy: Literal["factguard"] = strategy_field("factguard")
    verifier_tools: list[str] = Field(
        default_factory=lambda: list(KNOWN_TOOLS), description="tools the verifier may call (the tools: block sets "
        "per-tool backends and weights, as in every configuration)"
    )
    max_turns: int = Field(2, ge=1, le=8, description="model turns per sample; the last one must answer (ours: 2, App. C)")
    max_calls_per_turn: int = Field(3, ge=1, le=10, description="tool calls one turn may hold (ours)")
    budgets: dict[str, int | None] = Field(
        default_factory=lambda: dict[str, "int | None"]({"clip_scout": 1, "fact_probe": 3}),
        description="calls per sample; clip_scout 1 is the paper's, fact_probe 3 is ours (null: unlimited)",
    )
    overview_frames: int = Field(8, ge=1, le=32, description="frames of the whole video shown first (ours: 8)")
    grid_max_side: int = Field(1024, ge=64, le=4096, description="longest side of the ClipScout grid (ours)")
    fact_probe_top_k: int = Field(5, ge=1, le=20, description="results kept per search (ours)")
    answer_style: Literal["label", "yes_no"] = Field("label", description="answer fake/real, or yes/no to 'is it misinformation'")
    teacher_gold_hint: bool = Field(False, description="tell the model the gold label (SFT data generation only)")
    describe_frames: bool = Field(True, description="text-only backends: read on-screen text in the frames with OCR")
    temperature: Temperature | None = Field(None, description="the verifier's sampling temperature; None: the backend's own")
    max_tokens: MaxTokens | None = Field(768, description="tokens per turn; 768 is the paper's response length in training")
    artifacts_dir: Path | None = Field(None, description="where frame grids are saved; default: the cache folder")
    upfront_evidence: bool = Field(
        False, description="gather the run's evidence (its retrieval block) before the first turn and show it to the "
        "verifier with the video; off in the paper's setting (ours), where evidence comes only from FactProbe searches",
    )

    @field_validator("verifier_tools")
    @classmethod
    def _known(cls, value: list[str]) -> list[str]:
        unknown = [t for t in value if t not in KNOWN_TOOLS]
        if unknown:
            raise ValueError(f"unknown tool {unknown[0]!r}; FactGuard tools: {', '.join(KNOWN_TOOLS)}")
        return value

    def tools_used(self) -> list[str]:
        return list(dict.fromkeys([*self.verifier_tools, *self.tools]))

    def call_budget(self) -> CallBudget:
        return CallBudget(calls=self.max_turns, answer_tokens=self.max_tokens,
                          counts="one verifier call per turn")
