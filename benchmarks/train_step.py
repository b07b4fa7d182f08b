"""One real GRPO step of FactGuard's vision-language training on a tiny model, and what the paper's 7B model would need.

Part 1 builds a tiny random Qwen2.5-VL (the paper's architecture, 2 layers, 32 wide; tokenizer and
processor made locally, nothing downloaded) and runs one GRPO step through the FactGuard loop on
the example video post: the policy samples its own turns, the overview frames (and the ClipScout
grid when it asks for one) are images in its prompts, and every forward pass gets them back. It
prints the tokens the loss trains, the images per rollout, the loss, the peak memory of the
process and the wall time of the step.

Part 2 is a dry run: Qwen2.5-VL-7B's configuration (the public config.json's sizes, written here)
built on the meta device, so its parameters are counted without allocating them, and the memory
per GPU of the paper's GRPO estimated under two setups: bf16 weights with a LoRA adapter on one
GPU, and bf16 full training under DeepSpeed ZeRO-3 on 8 GPUs (the paper's). The estimate counts
weights, gradients, AdamW states, the frozen reference and activations with gradient checkpointing
for one sequence of the paper's maximum prompt plus a two-turn completion; it is arithmetic, not a
measurement, and the assumptions are printed with it.

    PYTHONPATH=$PWD .venv/bin/python benchmarks/train_step.py [--generations 2] [--tokens 32]
"""

from __future__ import annotations

import argparse
import logging
import os
import resource
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
GIB = 1024**3

QWEN25_VL_7B_TEXT = dict(vocab_size=152064, hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
                         num_key_value_heads=4, max_position_embeddings=128000, tie_word_embeddings=False,
                         rope_parameters={"rope_type": "default", "rope_theta": 1000000.0, "mrope_section": [16, 24, 24]})
QWEN25_VL_7B_VISION = dict(depth=32, hidden_size=1280, intermediate_size=3420, num_heads=16, out_hidden_size=3584, patch_size=14,
                           spatial_merge_size=2, temporal_patch_size=2, window_size=112, fullatt_block_indexes=[7, 15, 23, 31])
"""The sizes in Qwen/Qwen2.5-VL-7B-Instruct's config.json."""


def tiny_step(generations: int, tokens: int) -> None:
    from debates.strategies.factguard.config import FactGuardConfig
    from debates.config_loader import load_config, with_overrides
    from debates.strategies.factguard.training.grpo import GRPOSettings, train_grpo
    from m3d_agents.sample import Sample, VideoRef
    from tests.support.tiny_vision_model import tiny_vision_model

    clip = REPO / "examples" / "video" / "flood.mp4"
    if not clip.is_file():
        sys.exit(f"{clip} is missing; run scripts/make_example_video.py")
    caption = (REPO / "examples" / "video" / "caption.txt").read_text().strip()
    transcript = (REPO / "examples" / "video" / "transcript.txt").read_text().strip()
    samples = [Sample(text=caption, video=VideoRef(path=clip, transcript=transcript), gold_label=label) for label in ("fake", "real")]
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        model_dir, processor = tiny_vision_model(out / "model")
        config = with_overrides(load_config("factguard"), artifacts_dir=str(out / "grids"))
        assert isinstance(config, FactGuardConfig)
        settings = GRPOSettings(num_generations=generations, max_completion_length=tokens, max_steps=1)
        started = time.perf_counter()
        run = train_grpo(model_dir, samples, config, out / "run", settings, processing_class=processor,
                         gradient_accumulation_steps=generations * len(samples))
        wall = time.perf_counter() - started
    stats = run.rollout.stats
    log = next(entry for entry in run.trainer.state.log_history if "loss" in entry)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GIB
    rollouts = len(stats.images)
    print(f"one GRPO step, tiny Qwen2.5-VL, {len(samples)} samples x G={generations} = {rollouts} rollouts, {tokens} tokens a turn, "
          f"template: {run.template.source}")
    print(f"assistant tokens in loss mask: {sum(stats.mask_tokens)} ({', '.join(map(str, stats.mask_tokens))} per rollout)")
    print(f"images per rollout: {sum(stats.images) / rollouts:.1f} ({', '.join(map(str, stats.images))})")
    print(f"loss: {log['loss']:.4f} (reward {log['reward']:+.3f}, kl {log['kl']:.4f}; groups whose rollouts all scored alike, "
          f"so their advantages are 0: {log['frac_reward_zero_std']:.0%})")
    print(f"peak RSS: {peak:.2f} GiB; wall time: {wall:.1f} s")


def qwen7b_on_meta() -> tuple[int, int, int]:
    """Parameters of Qwen2.5-VL-7B (all, the vision tower's) and of a LoRA r=64 adapter on all linear layers, on the meta device."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    config = Qwen2_5_VLConfig(text_config=QWEN25_VL_7B_TEXT, vision_config=QWEN25_VL_7B_VISION, tie_word_embeddings=False)
    with torch.device("meta"):
        model = Qwen2_5_VLForConditionalGeneration(config)
    total = sum(p.numel() for p in model.parameters())
    vision = sum(p.numel() for p in model.model.visual.parameters())
    adapted = get_peft_model(model, LoraConfig(r=64, lora_alpha=128, target_modules="all-linear", task_type="CAUSAL_LM"))
    lora = sum(p.numel() for p in adapted.parameters() if p.requires_grad)
    return total, vision, lora


def activations(sequence: int, completion: int) -> float:
    """Bytes of activations for one sequence with gradient checkpointing: each layer's bf16 input kept, one layer
    recomputed at a time (about 16 hidden-sized and 3 MLP-sized bf16 tensors, FlashAttention's memory linear), and the
    fp32 log-softmax of the completion's logits (TRL keeps only those)."""
    text = QWEN25_VL_7B_TEXT
    hidden, mlp, layers, vocab = (int(text[k]) for k in ("hidden_size", "intermediate_size", "num_hidden_layers", "vocab_size"))  # type: ignore[call-overload]
    kept = sequence * hidden * 2 * layers
    one_layer = sequence * (16 * hidden + 3 * mlp) * 2
    logits = completion * vocab * 4 * 2
    return float(kept + one_layer + logits)


def estimates() -> None:
    total, vision, lora = qwen7b_on_meta()
    completion = 2 * 768 + 512
    sequence = 16384 + completion
    acts = activations(sequence, completion)
    print(f"Qwen2.5-VL-7B dry run on the meta device: {total / 1e9:.2f} B parameters ({vision / 1e9:.2f} B in the vision tower); "
          f"LoRA r=64 on all linear layers: {lora / 1e6:.0f} M trainable")
    print(f"assumed: one sequence of {sequence} tokens (the 16,384-token prompt cap, two 768-token turns and a tool result), "
          f"batch 1 per GPU, gradient checkpointing, AdamW; activations {acts / GIB:.1f} GiB")
    weights = 2 * total
    adapter = 16 * lora  # fp32 weights, gradients and two AdamW moments
    single = weights + adapter + acts
    print(f"estimated memory per GPU, bf16+LoRA (1 GPU): {single / GIB:.1f} GiB (bf16 weights {weights / GIB:.1f}, adapter with "
          f"gradients and AdamW {adapter / GIB:.1f}, activations {acts / GIB:.1f}; the reference is the base with the adapter off)")
    gpus = 8
    states = (2 + 2 + 4 + 8) * total / gpus  # bf16 weights and gradients, fp32 master weights and AdamW moments, sharded
    reference = 2 * total / gpus
    training = states + reference + acts
    generation = states + reference + weights  # ZeRO-3 gathers the whole bf16 policy for HF generate (no activations then)
    print(f"estimated memory per GPU, bf16+ZeRO-3 on 8 GPUs: {max(training, generation) / GIB:.1f} GiB at peak (sharded states "
          f"{states / GIB:.1f}, reference {reference / GIB:.1f}, activations {acts / GIB:.1f} while training; the gathered policy "
          f"{weights / GIB:.1f} while generating with HF generate, none with a vLLM server)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--generations", type=int, default=2, help="rollouts per sample (the paper uses 8)")
    parser.add_argument("--tokens", type=int, default=32, help="tokens per model turn (the paper allows 768)")
    args = parser.parse_args()
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore", category=FutureWarning)
    tiny_step(args.generations, args.tokens)
    estimates()


if __name__ == "__main__":
    main()
