"""Helpers for tests of the AgentM3D cascade and best-of-N turns: a post, Finish answers, per-candidate scores."""

from __future__ import annotations

from debates.debate_engine.config import TURN_POLICY_SETTINGS, DebateConfig
from debates.config_loader import load_config
from m3d_agents.sample import Sample
from tests.support.paths import EXAMPLE_IMAGE

M3D_SAMPLE = Sample(text="Storm clouds over the Statue of Liberty during Hurricane Sandy", images=[EXAMPLE_IMAGE], taxonomy="m3d")


def finish(action: str, marker: str = "", confidence: float = 0.8) -> str:
    return f"{marker} I checked my part of the post.\nFinish[{action}]\nCONFIDENCE: {confidence}"


def bon_config(name: str, **policy: object) -> DebateConfig:
    config = load_config(name)
    for seat in config.seats:
        seat.turn_policy = TURN_POLICY_SETTINGS.validate_python({**seat.turn_policy.model_dump(), **policy})
    return config


def by_candidate(values: dict[int, float]) -> object:
    return lambda candidate_text: f"SCORE: {next(v for k, v in values.items() if f'CAND-{k}' in candidate_text)}"
