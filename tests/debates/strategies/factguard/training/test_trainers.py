"""SFT and GRPO on TRL with a tiny random model: one SFT step, two GRPO steps through the FactGuard loop."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.train
pytest.importorskip("trl")

from debates.config_loader import load_config  # noqa: E402
from debates.strategies.factguard.training.grpo import FactGuardRollout, GRPOSettings, assistant_span, grpo_args, train_grpo  # noqa: E402
from debates.strategies.factguard.training.sft import train_sft  # noqa: E402
from m3d_agents.sample import Sample  # noqa: E402
from tests.support.tiny_model import tiny_model  # noqa: E402

CONVERSATION = [
    {"role": "system", "content": "check posts"},
    {"role": "user", "content": "post : a flood"},
    {"role": "assistant", "content": "<think> look </think> <tool_call> clip_scout </tool_call>"},
    {"role": "tool", "content": "results of your tool calls : image"},
    {"role": "assistant", "content": "<think> old </think> <answer> fake </answer>"},
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model(tmp_path_factory.mktemp("tiny"))


def test_only_the_models_own_tokens_are_trained(model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    prompt, completion, mask = assistant_span(tokenizer, CONVERSATION[:2], CONVERSATION)
    observation = tokenizer("results of your tool calls", add_special_tokens=False)["input_ids"]
    start = next(i for i in range(len(completion)) if completion[i : i + len(observation)] == observation)
    assert set(mask[start : start + len(observation)]) == {0}, "the tool result is context, not a target"
    assert mask[0] == 1 and mask[-1] == 1 and completion[-1] == tokenizer.convert_tokens_to_ids("<end_of_turn>")
    assert 0 < sum(mask) < len(mask)


def test_one_sft_step_on_exported_rows(model_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "sft.jsonl"
    data.write_text("".join(json.dumps({"messages": CONVERSATION, "images": []}) + "\n" for _ in range(4)))
    trainer = train_sft(model_dir, data, tmp_path / "out", max_steps=1, gradient_accumulation_steps=1)
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert trainer.state.global_step == 1 and losses and all(math.isfinite(v) for v in losses)


def test_the_factguard_defaults_map_onto_trl(tmp_path: Path) -> None:
    args = grpo_args(GRPOSettings(), tmp_path)
    assert (args.num_generations, args.beta, args.learning_rate, args.loss_type, args.max_completion_length) == (
        8, 0.04, 1e-6, "grpo", 768)
    assert args.scale_rewards == "group" and args.reward_weights == [1.0, 1.0, 1.0, 1.0]


def test_two_grpo_steps_through_the_factguard_loop(model_dir: Path, tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    samples = [Sample(text=f"post number {i} shows a flood", gold_label=("fake" if i % 2 else "real")) for i in range(4)]
    rollouts: list[dict[str, Any]] = []
    original = FactGuardRollout.__call__

    def recording(self: FactGuardRollout, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        output = original(self, prompts, trainer)
        rollouts.append(output)
        return output

    def varied(completions: list[Any], **kwargs: Any) -> list[float]:
        return [float(i) for i in range(len(completions))]

    before = {k: v.clone() for k, v in AutoModelForCausalLM.from_pretrained(model_dir).state_dict().items()}
    settings = GRPOSettings(num_generations=2, max_completion_length=12, learning_rate=1e-2, max_steps=2)
    FactGuardRollout.__call__ = recording  # type: ignore[method-assign]
    try:
        trainer = train_grpo(model_dir, samples, load_config("factguard"), tmp_path / "out", settings, extra_rewards=[varied])
    finally:
        FactGuardRollout.__call__ = original  # type: ignore[method-assign]
    assert trainer.state.global_step == 2
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert logs and all(math.isfinite(entry["loss"]) for entry in logs)
    for term in ("accuracy", "format", "risk", "tool"):
        assert f"rewards/{term}/mean" in logs[0], sorted(logs[0])
    assert all(len(output["completion_ids"]) == 2 for output in rollouts), "one completion per prompt handed in"
    lengths = [sum(mask) for output in rollouts for mask in output["env_mask"]]
    assert logs[0]["completions/mean_length"] == pytest.approx(sum(lengths[:2]) / 2)
    after = trainer.model.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before), "the weights changed"
