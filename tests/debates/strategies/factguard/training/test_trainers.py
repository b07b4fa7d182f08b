"""SFT and GRPO on TRL with a tiny random text model: the text-only path keeps working beside the vision one."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.train
pytest.importorskip("trl")

from debates.config_loader import load_config  # noqa: E402
from debates.strategies.factguard.training.chat_template import training_template  # noqa: E402
from debates.strategies.factguard.training.grpo import GRPOSettings, accumulation, grpo_args, train_grpo  # noqa: E402
from debates.strategies.factguard.training.rendering import render  # noqa: E402
from debates.strategies.factguard.training.rewards import Outcome, RewardConfig, trajectory_reward  # noqa: E402
from debates.strategies.factguard.training.rollout import completion_span  # noqa: E402
from debates.strategies.factguard.training.sft import dataset_rows, read_rows, train_sft  # noqa: E402
from debates.strategies.factguard.training.trainer import FactGuardGRPOTrainer  # noqa: E402
from m3d_agents.errors import InputError  # noqa: E402
from m3d_agents.sample import Sample  # noqa: E402
from tests.support.grpo_oracle import group_advantages  # noqa: E402
from tests.support.tiny_model import tiny_model  # noqa: E402

CONVERSATION = [
    {"role": "system", "content": "check posts"},
    {"role": "user", "content": "post : a flood"},
    {"role": "assistant", "content": "<think> look </think> <tool_call> clip_scout </tool_call>"},
    {"role": "user", "content": "results of your tool calls : image"},
    {"role": "assistant", "content": "<think> old </think> <answer> fake </answer>"},
]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tiny_model(tmp_path_factory.mktemp("tiny"))


def test_only_the_models_own_tokens_are_trained(model_dir: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    template = training_template(tokenizer, "tiny")
    assert template.source == "the model's own template"
    completion, mask = completion_span(render(tokenizer, template, CONVERSATION[:2], add_generation_prompt=True),
                                       render(tokenizer, template, CONVERSATION, with_mask=True))
    observation = tokenizer("results of your tool calls", add_special_tokens=False)["input_ids"]
    start = next(i for i in range(len(completion)) if completion[i : i + len(observation)] == observation)
    assert set(mask[start : start + len(observation)]) == {0}, "the tool result is context, not a target"
    assert mask[0] == 1 and mask[-1] == 1 and completion[-1] == tokenizer.convert_tokens_to_ids("<end_of_turn>")
    assert 0 < sum(mask) < len(mask)


def test_one_sft_step_on_exported_rows_a_text_model_reads_images_as_text(model_dir: Path, tmp_path: Path) -> None:
    from PIL import Image

    Image.new("RGB", (8, 8), (200, 0, 0)).save(tmp_path / "frame.png")
    with_image = [*CONVERSATION[:1], {"role": "user", "content": [{"type": "text", "text": "post : a flood"}, {"type": "image"}]},
                  *CONVERSATION[2:]]
    data = tmp_path / "sft.jsonl"
    data.write_text(json.dumps({"messages": CONVERSATION, "images": []}) + "\n"
                    + json.dumps({"messages": with_image, "images": [str(tmp_path / "frame.png")]}) + "\n")
    trainer = train_sft(model_dir, data, tmp_path / "out", max_steps=1, gradient_accumulation_steps=2)
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    assert trainer.state.global_step == 1 and losses and all(math.isfinite(v) for v in losses)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    rows = dataset_rows(read_rows(data), tokenizer, training_template(tokenizer, "tiny")).rows
    assert rows[1]["messages"][1]["content"] == "post : a flood[image]" and "images" not in rows[1]


def test_the_factguard_defaults_map_onto_trl(tmp_path: Path) -> None:
    args = grpo_args(GRPOSettings(), tmp_path, processes=1)
    assert (args.num_generations, args.beta, args.learning_rate, args.loss_type, args.max_completion_length) == (
        8, 0.04, 1e-6, "grpo", 768)
    assert args.scale_rewards == "group" and args.reward_weights == [1.0, 1.0, 1.0, 1.0]
    assert (args.per_device_train_batch_size, args.gradient_accumulation_steps) == (1, 8), "one group of 8 per step"
    assert accumulation(GRPOSettings(), 8) == 1, "the paper's 8 GPUs: batch 1 each, no accumulation"
    with pytest.raises(InputError, match="num_generations"):
        accumulation(GRPOSettings(num_generations=6), 4)
    ablation = grpo_args(GRPOSettings(beta=0.02, num_generations=6, reward=RewardConfig(lam=0.0)), tmp_path, processes=1)
    assert (ablation.beta, ablation.num_generations, ablation.reward_weights) == (0.02, 6, [1.0, 1.0, 0.0, 1.0])


def test_two_grpo_steps_through_the_factguard_loop(model_dir: Path, tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    samples = [Sample(text=f"post number {i} shows a flood", gold_label=("fake" if i % 2 else "real")) for i in range(4)]
    scored: list[dict[str, Any]] = []
    original = FactGuardGRPOTrainer._generate_and_score_completions

    def recording(self: FactGuardGRPOTrainer, inputs: Any) -> Any:
        output = original(self, inputs)
        scored.append({"advantages": output["advantages"].tolist(), "outcomes": [i["outcome"] for i in inputs]})
        return output

    def varied(completions: list[Any], **kwargs: Any) -> list[float]:
        return [float(i) for i in range(len(completions))]

    before = {k: v.clone() for k, v in AutoModelForCausalLM.from_pretrained(model_dir).state_dict().items()}
    settings = GRPOSettings(num_generations=2, max_completion_length=12, learning_rate=1e-2, max_steps=2)
    FactGuardGRPOTrainer._generate_and_score_completions = recording  # type: ignore[method-assign]
    try:
        run = train_grpo(model_dir, samples, load_config("factguard"), tmp_path / "out", settings, extra_rewards=[varied])
    finally:
        FactGuardGRPOTrainer._generate_and_score_completions = original  # type: ignore[method-assign]
    trainer = run.trainer
    assert trainer.state.global_step == 2 and run.template.source == "the model's own template"
    logs = [entry for entry in trainer.state.log_history if "loss" in entry]
    assert logs and all(math.isfinite(entry["loss"]) for entry in logs)
    for term in ("accuracy", "format", "risk", "tool"):
        assert f"rewards/{term}/mean" in logs[0], sorted(logs[0])
    assert all(n > 0 for n in run.rollout.stats.mask_tokens) and run.rollout.stats.images == [0, 0], "a text model sees no images"
    for batch in scored:
        totals = [trajectory_reward(Outcome(**o)).total + i for i, o in enumerate(batch["outcomes"])]
        assert batch["advantages"] == pytest.approx(group_advantages(totals, 2), abs=1e-4), "Eq. 7 over the weighted sum"
    after = trainer.model.state_dict()
    assert any(not torch.equal(before[k], after[k]) for k in before), "the weights changed"


def test_the_prompt_cap_leaves_out_samples_whose_first_prompt_is_longer(model_dir: Path, tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    from debates.strategies.factguard.training.grpo import measure_prompts

    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    template = training_template(tokenizer, "tiny")
    short, long = Sample(text="a flood", gold_label="fake"), Sample(text="a flood " * 400, gold_label="fake")
    config = load_config("factguard")
    sizes = measure_prompts([short, long], config, tokenizer, template, 0).too_long
    assert sizes[long.id] > sizes[short.id] + 700
    fit = measure_prompts([short, long], config, tokenizer, template, (sizes[short.id] + sizes[long.id]) // 2)
    assert fit.kept == [short] and fit.too_long == {long.id: sizes[long.id]}
    with pytest.raises(InputError, match="no sample's first prompt fits in 64 tokens"):
        train_grpo(model_dir, [short], config, tmp_path / "out", GRPOSettings(max_prompt_length=64))


def test_m3d_train_grpo_runs_a_step_from_the_command_line(model_dir: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from debates.cli.main import app

    rows = [{"video_id": f"70{i}", "description": f"Flood number {i} on the highway", "annotation": "fake" if i % 2 else "real",
             "publish_time": 1661990400000 + i} for i in range(2)]
    data = tmp_path / "fakett.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "grpo"
    result = CliRunner().invoke(app, ["train", "grpo", "--dataset", f"fakett:{data}", "--model", str(model_dir), "--out", str(out),
                                      "--max-steps", "1", "-G", "2", "--max-completion-length", "8", "--lambda", "0",
                                      "--retrieval", "off", "--dtype", "fp32"])
    assert result.exit_code == 0, result.output
    assert "FactProbe: retrieval off" in result.output and "lambda=0.0" in result.output
    assert f"{out}: 1 steps (the model's own template)" in " ".join(result.output.split())
    assert (out / "model.safetensors").is_file()


def fakett(tmp_path: Path, descriptions: list[str]) -> Path:
    rows = [{"video_id": f"70{i}", "description": text, "annotation": "fake" if i % 2 else "real", "publish_time": 1661990400000 + i}
            for i, text in enumerate(descriptions)]
    data = tmp_path / "fakett.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return data


def test_m3d_train_grpo_states_its_departures_and_the_samples_left_out_before_the_first_step(
        model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from debates.cli.main import app

    def first_step(self: Any, *args: Any, **kwargs: Any) -> None:
        print("FIRST STEP")
        raise SystemExit(0)

    monkeypatch.setattr(FactGuardGRPOTrainer, "train", first_step)
    data = fakett(tmp_path, ["Flood on the highway", "Flood " * 1300, "A bridge opened"])
    result = CliRunner().invoke(app, ["train", "grpo", "--dataset", f"fakett:{data}", "--model", str(model_dir), "--out",
                                      str(tmp_path / "grpo"), "-G", "2", "--max-completion-length", "8", "--max-prompt-length",
                                      "1000", "--retrieval", "off", "--dtype", "fp32", "--lora", "--tool-use", "answered"])
    output = " ".join(result.output.split())
    assert "FIRST STEP" in output, output
    before = output[: output.index("FIRST STEP")]
    assert "prompt cap: 2 of 3 samples fit in 1,000 tokens" in before
    assert "departures from the paper (4; saved with the trained weights in departures.json):" in before
    assert "[lora] A LoRA adapter (rank 64, alpha 128) is trained instead of every weight" in before
    assert "[dtype] Weights and compute are fp32 (--dtype fp32), where the paper trains in BF16 mixed precision (paper line 333)" in before
    assert "[prompt-cap-leaves-out] 1 of 3 samples are left out of training, their first prompt over the 1,000-token cap" in before
    assert "(the paper: 16,384)" in before and "tokens) (paper line 183, 339)" in before
    assert "[tool-reward-answered-calls] R_tool counts only tool calls that ran and answered" in before
    assert "tool calls counted: answered" in before and "LoRA r=64, fp32; rollouts on HF generate, batches of 8" in before
    assert "memory: estimated peak" in before and "no GPU visible" in before


def test_the_memory_check_refuses_a_run_that_cannot_fit_with_its_numbers_and_force_starts_it(
        model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from debates.cli.main import app
    from debates.strategies.factguard.training import memory

    monkeypatch.setattr(memory, "visible_gpus", lambda: [memory.GpuMemory(0, "Small GPU", free=512 * 1024**2, total=80 * 1024**3)])
    data = fakett(tmp_path, ["Flood on the highway", "A bridge opened"])
    command = ["train", "grpo", "--dataset", f"fakett:{data}", "--model", str(model_dir), "--out", str(tmp_path / "grpo"),
               "--max-steps", "1", "-G", "2", "--max-completion-length", "8", "--retrieval", "off", "--dtype", "fp32"]
    refused = CliRunner().invoke(app, command)
    output = " ".join(refused.output.split())
    assert refused.exit_code != 0 and not (tmp_path / "grpo" / "model.safetensors").exists()
    assert "memory: estimated peak 0.0 GiB per GPU (fp32 weights, all trained, one GPU, gradient checkpointing, 2 turns generated at once" in output
    assert "0.5 of 80.0 GiB free on cuda:0 (Small GPU)" in output
    assert ("memory: the estimated peak of 0.0 GiB per GPU (fp32 weights, all trained, one GPU, gradient checkpointing, 2 turns "
            "generated at once) and 1 GiB of headroom do not fit in the 0.5 GiB free on cuda:0 (Small GPU); would fit: none of "
            "LoRA, ZeRO-3 or fewer turns generated at once; --force starts anyway") in output
    forced = CliRunner().invoke(app, [*command, "--force"])
    assert forced.exit_code == 0, forced.output
    assert "memory: --force given, starting anyway" in forced.output and (tmp_path / "grpo" / "model.safetensors").is_file()
    saved = json.loads((tmp_path / "grpo" / "departures.json").read_text())
    assert [d["id"] for d in saved] == ["dtype"]


def test_the_memory_check_names_the_settings_that_would_fit_a_7b_model_on_one_gpu() -> None:
    import sys

    from debates.strategies.factguard.training.memory import GIB, GpuMemory, Layout, check_memory
    from debates.strategies.factguard.training.scale import ScaleSettings

    sys.path.insert(0, str(Path(__file__).resolve().parents[5] / "benchmarks"))
    from train_step import paper_workload, qwen7b_config

    h100 = [GpuMemory(0, "NVIDIA H100 80GB HBM3", free=int(79 * GIB), total=int(80 * GIB))]
    full = check_memory(qwen7b_config(), ScaleSettings(dtype="bf16"), paper_workload(8), reference=True, generations=8,
                        layout=Layout(), gpus=h100)
    assert not full.fits and full.estimate.peak_gib > 79
    refusal = full.refusal()
    assert refusal.startswith(f"memory: the estimated peak of {full.estimate.peak_gib:.1f} GiB per GPU (bf16 weights, all trained, "
                              "one GPU, gradient checkpointing, 8 turns generated at once)")
    assert "do not fit in the 79.0 GiB free on cuda:0 (NVIDIA H100 80GB HBM3); would fit: --lora (r=64): " in refusal
    assert "ZeRO-3 on 8 GPUs (accelerate launch" in refusal and refusal.endswith("--force starts anyway")
    lora = ScaleSettings(dtype="bf16", lora={"r": 64})
    tight = [GpuMemory(0, "NVIDIA L40S", free=int(46 * GIB), total=int(48 * GIB))]
    fewer = check_memory(qwen7b_config(), lora, paper_workload(8), reference=True, generations=8, layout=Layout(), gpus=tight)
    assert not fewer.fits and any(o.change.startswith("--rollout-batch-size ") and "or -G " in o.change for o in fewer.options)
    assert all(o.estimate.peak + GIB <= 46 * GIB for o in fewer.options)


def test_m3d_train_sft_states_its_departures_and_memory_before_training_and_saves_them(model_dir: Path, tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from debates.cli.main import app

    data = tmp_path / "sft.jsonl"
    data.write_text(json.dumps({"messages": CONVERSATION, "images": []}) + "\n")
    out = tmp_path / "sft"
    result = CliRunner().invoke(app, ["train", "sft", "--data", str(data), "--model", str(model_dir), "--out", str(out),
                                      "--max-steps", "1", "--gradient-accumulation", "1", "--lora", "--lora-r", "4", "--dtype", "fp32"])
    assert result.exit_code == 0, result.output
    output = " ".join(result.output.split())
    assert output.index("departures from the paper (2;") < output.index("memory: estimated peak") < output.index(f"{out}: 1 steps")
    assert "[lora] A LoRA adapter (rank 4, alpha 128)" in output and "[dtype] Weights and compute are fp32 (--dtype fp32)" in output
    assert [d["id"] for d in json.loads((out / "departures.json").read_text())] == ["lora", "dtype"]
    assert (out / "adapter_config.json").is_file(), "an adapter, which GRPO merges into its base before it trains"
