"""``m3d train``: every ablation is an option that lands in its setting, bad values are one line, the DeepSpeed configs ship."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from debates.cli import training
from debates.cli.main import app
from debates.strategies.factguard.training.grpo import GRPOSettings
from debates.strategies.factguard.training.sft import SFTSettings


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """The settings ``m3d train grpo`` would train with; the training itself is stopped there."""
    seen: dict[str, Any] = {}
    original = training._settings

    def keep(model: type[Any], path: Path | None, overrides: dict[str, Any]) -> Any:
        seen["settings"] = original(model, path, overrides)
        raise SystemExit(0)

    monkeypatch.setattr(training, "_settings", keep)
    return seen


def test_every_ablation_is_an_option_of_m3d_train_grpo(captured: dict[str, Any], tmp_path: Path) -> None:
    pytest.importorskip("trl")
    settings_file = tmp_path / "settings.yaml"
    settings_file.write_text("reward: {alpha: 2.0}\nscale: {dtype: bf16}\nnum_generations: 12\n")
    result = CliRunner().invoke(app, [
        "train", "grpo", "--dataset", "fakett:x.jsonl", "--settings", str(settings_file), "--gamma", "1", "--lambda", "0",
        "--r-tool-pos", "0", "--r-tool-neg", "0", "--beta", "0.06", "--format-gate", "--lora", "--lora-r", "16",
        "--max-prompt-length", "8192", "--vllm-server", "http://127.0.0.1:8000", "--no-gradient-checkpointing",
    ])
    assert result.exit_code == 0, result.output
    settings: GRPOSettings = captured["settings"]
    reward = settings.reward
    assert (reward.alpha, reward.gamma, reward.lam, reward.r_tool_pos, reward.r_tool_neg, reward.format_gate) == (2.0, 1.0, 0.0, 0.0, 0.0, True)
    assert (settings.num_generations, settings.beta, settings.max_prompt_length, settings.vllm_server) == (12, 0.06, 8192, "http://127.0.0.1:8000")
    assert settings.scale.dtype == "bf16" and not settings.scale.gradient_checkpointing
    assert settings.scale.lora is not None and (settings.scale.lora.r, settings.scale.lora.alpha) == (16, 128)


def test_the_defaults_are_the_papers(captured: dict[str, Any]) -> None:
    pytest.importorskip("trl")
    result = CliRunner().invoke(app, ["train", "grpo", "--dataset", "fakett:x.jsonl"])
    assert result.exit_code == 0, result.output
    settings: GRPOSettings = captured["settings"]
    assert (settings.num_generations, settings.beta, settings.learning_rate, settings.max_completion_length, settings.max_prompt_length) == (
        8, 0.04, 1e-6, 768, 16384)
    assert (settings.reward.alpha, settings.reward.gamma) == (1.0, 1.0) and settings.scale.lora is None


def test_a_bad_setting_is_one_line_naming_it(tmp_path: Path) -> None:
    pytest.importorskip("trl")
    result = CliRunner().invoke(app, ["train", "grpo", "--dataset", "fakett:x.jsonl", "--lambda", "-1"])
    assert result.exit_code == 2 and "reward.lam" in result.output and "Traceback" not in result.output
    bad = tmp_path / "s.yaml"
    bad.write_text("scale: {dtype: int8}\n")
    result = CliRunner().invoke(app, ["train", "sft", "--data", "x.jsonl", "--settings", str(bad)])
    assert result.exit_code == 2 and "scale.dtype" in result.output and str(bad) in result.output.replace("\n", "")
    assert SFTSettings().scale.gradient_checkpointing


@pytest.mark.parametrize("stage", [2, 3])
def test_the_deepspeed_configs_ship_for_eight_gpus(stage: int) -> None:
    result = CliRunner().invoke(app, ["train", "accelerate-config", "--zero", str(stage)])
    path = Path(result.output.strip())
    assert result.exit_code == 0 and path.is_file()
    config = yaml.safe_load(path.read_text())
    assert (config["distributed_type"], config["deepspeed_config"]["zero_stage"], config["mixed_precision"], config["num_processes"]) == (
        "DEEPSPEED", stage, "bf16", 8)
