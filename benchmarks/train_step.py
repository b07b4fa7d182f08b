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
GPU, and bf16 full training under DeepSpeed ZeRO-3 on 8 GPUs (the paper's). The estimate is the
formula ``m3d train`` checks before it loads a model
(:mod:`debates.strategies.factguard.training.memory`), at one sequence of the paper's maximum
prompt plus a two-turn completion; it is arithmetic, not a measurement (``benchmarks/gpu_check.py``
measures it), and the assumptions are printed with it.

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
from typing import Any

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


def qwen7b_config() -> Any:
    from transformers import Qwen2_5_VLConfig

    return Qwen2_5_VLConfig(text_config=QWEN25_VL_7B_TEXT, vision_config=QWEN25_VL_7B_VISION, tie_word_embeddings=False)


FRAME_TOKENS = 26 * 46
"""A 1280x720 frame under Qwen2.5-VL's image processor: resized to 728x1288, 28-pixel tiles."""
GRID_TOKENS = 21 * 37
"""A 1024x576 ClipScout grid likewise (588x1036)."""


def paper_workload(generation_rows: int) -> Any:
    """The paper's longest GRPO sequence: the 16,384-token prompt cap (eight 1280x720 overview frames in it), two
    768-token turns, and a tool result holding a ClipScout grid and 512 tokens of text."""
    from debates.strategies.factguard.training.memory import Workload

    completion = 2 * 768 + GRID_TOKENS + 512
    return Workload(sequence=16384 + completion, logits=completion, image_tokens=8 * FRAME_TOKENS + GRID_TOKENS,
                    generation_rows=generation_rows, generation_prompt=16384 + 768 + GRID_TOKENS + 512)


def estimates() -> None:
    from debates.strategies.factguard.training.memory import Layout, estimate, model_sizes
    from debates.strategies.factguard.training.scale import LoraSettings, ScaleSettings

    config = qwen7b_config()
    sizes = model_sizes(config, LoraSettings(r=64))
    lora = ScaleSettings(dtype="bf16", lora=LoraSettings(r=64))
    full = ScaleSettings(dtype="bf16")
    one = paper_workload(generation_rows=8)
    print(f"Qwen2.5-VL-7B dry run on the meta device: {sizes.parameters / 1e9:.2f} B parameters "
          f"({sizes.vision_parameters / 1e9:.2f} B in the vision tower); LoRA r=64 on all linear layers: "
          f"{sizes.lora_parameters / 1e6:.0f} M trainable")
    print(f"assumed: one sequence of {one.sequence} tokens ({one.image_tokens} of them images: eight 1280x720 frames and a "
          "ClipScout grid), batch 1 per GPU, gradient checkpointing, AdamW, G = 8; the formula m3d train checks "
          "(debates/strategies/factguard/training/memory.py)")
    single = estimate(sizes, lora, one, Layout(), reference=True)
    print(f"estimated memory per GPU, bf16+LoRA, 1 GPU, the 8 rollouts of a group generated together: {single.describe()}")
    sharded = estimate(sizes, full, paper_workload(generation_rows=1), Layout(processes=8, stage=3), reference=True)
    print(f"estimated memory per GPU, bf16+ZeRO-3 on 8 GPUs, HF generate on the gathered policy: {sharded.describe()}")


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
