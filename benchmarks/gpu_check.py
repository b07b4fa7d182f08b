"""FactGuard's training at the paper's scale, measured in one command on one GPU (``--tiny``: the same on the CPU).

1. Builds Qwen2.5-VL-7B's architecture (the sizes in ``train_step.py``) with random weights, made on
   the GPU in bf16, with a tokenizer trained here and Qwen2.5-VL's own image processor bounds (a
   1280x720 frame stays full size), and saves it to a folder: nothing is downloaded.
2. Makes a 1280x720, 8-second clip, so the eight overview frames are full-size images.
3. Runs GRPO through ``train_grpo`` (bf16, LoRA r = 64, gradient checkpointing, G = 8, one post, 96
   tokens a turn) for two steps: the first with batched rollouts, the second with one rollout at a
   time (the batched one is measured cold, so its lead is not flattered). Prints the first prompt's
   tokens, the rollout seconds both ways, each step's seconds, the peak GPU memory, the estimate of
   ``m3d train``'s memory check (:mod:`debates.strategies.factguard.training.memory`) at the
   lengths the rollouts had, and their ratio.
4. Runs one SFT step on a row with the eight frames and a ClipScout grid, likewise.
5. Times a learned detector (a ViT-Base classifier with random weights, on the GPU) and the forensic
   tools (NumPy, on the CPU) over 1280x720 images: images per second.

Each figure is one line ``name: value``. ``--tiny`` runs every step on the CPU with a 2-layer,
32-wide model whose image processor shrinks images to at most 56x56 pixels, and a one-layer
detector (the ``train`` test tier runs it); GPU figures then read ``n/a``. The import graph is kept to the training path (no model server, no llama.cpp, no Ray), so
the command runs where only PyTorch, transformers, peft and accelerate are installed and the rest
travels as wheels (``scripts/gpu-check-wheels.sh``).

    PYTHONPATH=$PWD python benchmarks/gpu_check.py [--tiny]
"""

from __future__ import annotations

import argparse
import gc
import json
import logging
import os
import resource
import sys
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

GIB = 1024**3
GENERATIONS = 8
TOKENS = 96
LORA_R = 64
DETECTOR_IMAGES = 64
SCOUT = '<think>the middle decides</think><tool_call>{"name": "clip_scout", "arguments": {"start_s": 2, "end_s": 6}}</tool_call>'
ANSWER = "<think>the frames settle it</think><answer>fake</answer>"


def line(name: str, value: Any) -> None:
    print(f"{name}: {value}", flush=True)


def gpu() -> Any:
    import torch

    return torch.cuda if torch.cuda.is_available() else None


def peak_gib() -> str:
    cuda = gpu()
    if cuda is None:
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 / GIB
        return f"n/a on the CPU (peak RSS of the whole process {rss:.2f} GiB)"
    return f"{cuda.max_memory_allocated() / GIB:.2f}"


def reset_peak() -> None:
    """Free what an earlier step left (a trainer holds its model in reference cycles) and start the peak afresh."""
    gc.collect()
    cuda = gpu()
    if cuda is not None:
        cuda.empty_cache()
        cuda.reset_peak_memory_stats()


def ratio(estimate_gib: float) -> str:
    cuda = gpu()
    return "n/a on the CPU" if cuda is None else f"{cuda.max_memory_allocated() / GIB / estimate_gib:.2f}"


def build_policy(folder: Path, tiny: bool) -> tuple[Path, Any]:
    """The policy with random weights, made where it will train (7B: on the GPU in bf16) and saved to ``folder``."""
    import torch

    from tests.support.tiny_vision_model import QWEN_IMAGES, TINY_IMAGES, TINY_TEXT, TINY_VISION, qwen25_vl
    from train_step import QWEN25_VL_7B_TEXT, QWEN25_VL_7B_VISION

    started = time.perf_counter()
    if tiny:
        built = qwen25_vl(folder, TINY_TEXT, TINY_VISION, TINY_IMAGES)
    else:
        built = qwen25_vl(folder, QWEN25_VL_7B_TEXT, QWEN25_VL_7B_VISION, QWEN_IMAGES, device="cuda", dtype=torch.bfloat16)
    reset_peak()
    line("model build and save s", f"{time.perf_counter() - started:.1f}")
    return built


def grpo_figures(model_dir: Path, processor: Any, clip: Path, work: Path, tiny: bool) -> None:
    from autogen_core import CancellationToken  # noqa: F401  (the loop's dependency, imported before timing)
    from transformers import AutoConfig, TrainerCallback

    from debates.config_loader import load_config, with_overrides
    from debates.strategies.factguard.config import FactGuardConfig
    from debates.strategies.factguard.training.grpo import GRPOSettings, plan_grpo, train_grpo
    from debates.strategies.factguard.training.memory import Layout, Workload, estimate, model_sizes
    from debates.strategies.factguard.training.rendering import image_tokens
    from debates.strategies.factguard.training.rollout import FactGuardRollout
    from debates.strategies.factguard.training.scale import LoraSettings, ScaleSettings
    from m3d_agents.sample import Sample, VideoRef

    config = with_overrides(load_config("factguard"), artifacts_dir=str(work / "grids"))
    assert isinstance(config, FactGuardConfig)
    scale = ScaleSettings(dtype="fp32" if tiny else "bf16", gradient_checkpointing=True, lora=LoraSettings(r=LORA_R))
    settings = GRPOSettings(num_generations=GENERATIONS, max_completion_length=TOKENS, max_steps=2, rollout_batch_size=GENERATIONS,
                            scale=scale)
    post = [Sample(text="A flood swept through the town centre this morning, the video shows it", video=VideoRef(path=clip),
                   gold_label="fake")]
    plan = plan_grpo(model_dir, post, config, settings, processing_class=processor)
    line("first prompt tokens", plan.fit.longest)
    line("first prompt image tokens", plan.fit.image_tokens)

    rollouts: list[tuple[int, float, dict[str, Any], list[int]]] = []
    original: Callable[..., dict[str, Any]] = FactGuardRollout.__call__

    def timed(self: FactGuardRollout, prompts: list[Any], trainer: Any) -> dict[str, Any]:
        self.batch_size = GENERATIONS if not rollouts else 1  # batched first (cold), then one at a time
        started = time.perf_counter()
        out = original(self, prompts, trainer)
        rollouts.append((self.batch_size, time.perf_counter() - started, out, list(self.stats.batches)))
        return out

    steps: list[float] = []

    class StepTimer(TrainerCallback):
        def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
            self.started = time.perf_counter()

        def on_step_end(self, *args: Any, **kwargs: Any) -> None:
            steps.append(time.perf_counter() - self.started)

    reset_peak()
    FactGuardRollout.__call__ = timed  # type: ignore[method-assign]
    try:
        run = train_grpo(model_dir, post, config, work / "grpo", settings, processing_class=processor, plan=plan, callbacks=[StepTimer()])
    finally:
        FactGuardRollout.__call__ = original  # type: ignore[method-assign]
    for batch, seconds, _, calls in rollouts:
        kind = f"batched, up to {batch} turns a generate call" if batch > 1 else "sequential, one rollout at a time"
        line(f"rollout s ({kind})", f"{seconds:.1f} ({len(calls)} generate call{'s' if len(calls) != 1 else ''} of "
                                    f"{', '.join(map(str, calls))} turns)")
    for (batch, _, _, _), seconds in zip(rollouts, steps):
        line(f"step s ({'batched' if batch > 1 else 'sequential'} rollouts; the rollouts, the reference and policy passes of "
             f"{GENERATIONS} sequences, the optimizer)", f"{seconds:.1f}")
    log = next(entry for entry in run.trainer.state.log_history if "loss" in entry)
    line("loss of the first step", f"{log['loss']:.4f}")
    line("peak GPU memory GiB", peak_gib())
    outs = [out for _, _, out, _ in rollouts]
    sequences = [(p, c) for out in outs for p, c in zip(out["prompt_ids"], out["completion_ids"])]
    measured = Workload(sequence=max(len(p) + len(c) for p, c in sequences), logits=max(len(c) for _, c in sequences),
                        image_tokens=max(image_tokens(processor, p + c) for p, c in sequences), generation_rows=GENERATIONS)
    sizes = model_sizes(AutoConfig.from_pretrained(plan.model_dir), scale.lora)
    found = estimate(sizes, scale, measured, Layout(), reference=True)
    line("estimate GiB", f"{found.peak_gib:.2f} (at the measured lengths: sequences of up to {measured.sequence} tokens, "
                         f"{measured.image_tokens} of them images; {found.describe()})")
    line("estimate GiB before loading (m3d train's check: every turn at its limit)",
         f"{estimate(sizes, scale, plan.workload, Layout(), reference=True).peak_gib:.2f}")
    line("measured / estimate", ratio(found.peak_gib))
    del run


def sft_figures(model_dir: Path, processor: Any, clip: Path, work: Path, tiny: bool) -> None:
    from transformers import AutoConfig, TrainerCallback

    from debates.strategies.factguard.training.memory import Layout, estimate, model_sizes
    from debates.strategies.factguard.training.scale import LoraSettings, ScaleSettings
    from debates.strategies.factguard.training.sft import SFTSettings, plan_sft, train_sft
    from m3d_agents.media.video import grid, overview_frames, sample_frames

    frames = overview_frames(clip, 8)
    paths = []
    for index, frame in enumerate(frames):
        paths.append(work / f"frame{index}.png")
        frame.image.save(paths[-1])
    paths.append(work / "grid.png")
    grid([f.image for f in sample_frames(clip, 2, 6, 4)], max_side=1024).save(paths[-1])
    row = {"messages": [
        {"role": "system", "content": "You check whether a video post is misinformation."},
        {"role": "user", "content": [{"type": "text", "text": "Post: a flood swept through the town centre. Frames:"},
                                     *[{"type": "image"} for _ in frames]]},
        {"role": "assistant", "content": SCOUT},
        {"role": "user", "content": [{"type": "text", "text": "Results of your tool calls: clip_scout: frames of 2-6 s"}, {"type": "image"}]},
        {"role": "assistant", "content": ANSWER},
    ], "images": [str(p) for p in paths]}
    data = work / "sft.jsonl"
    data.write_text(json.dumps(row) + "\n")
    scale = ScaleSettings(dtype="fp32" if tiny else "bf16", gradient_checkpointing=True, lora=LoraSettings(r=LORA_R))
    settings = SFTSettings(scale=scale, max_steps=1, gradient_accumulation_steps=1)
    plan = plan_sft(model_dir, data, settings, processing_class=processor)
    line("sft row tokens", f"{plan.workload.sequence} ({plan.workload.image_tokens} of them images)")
    steps: list[float] = []

    class StepTimer(TrainerCallback):
        def on_step_begin(self, *args: Any, **kwargs: Any) -> None:
            self.started = time.perf_counter()

        def on_step_end(self, *args: Any, **kwargs: Any) -> None:
            steps.append(time.perf_counter() - self.started)

    reset_peak()
    trainer = train_sft(model_dir, data, work / "sft", settings, plan=plan, callbacks=[StepTimer()])
    line("sft step s", f"{steps[0]:.1f}")
    line("sft peak GPU memory GiB", peak_gib())
    sizes = model_sizes(AutoConfig.from_pretrained(plan.model_dir), scale.lora)
    found = estimate(sizes, scale, plan.workload, Layout())
    line("sft estimate GiB", f"{found.peak_gib:.2f} ({found.describe()})")
    line("sft measured / estimate", ratio(found.peak_gib))
    del trainer


def detector(folder: Path, tiny: bool) -> Path:
    """A ViT-Base/16 image classifier (real, fake) with random weights, saved as a Hugging Face checkpoint."""
    if tiny:
        from tests.support.tiny_detectors import tiny_classifier

        return tiny_classifier(folder)
    from transformers import ViTConfig, ViTForImageClassification, ViTImageProcessor

    config = ViTConfig(image_size=224, patch_size=16, hidden_size=768, num_hidden_layers=12, num_attention_heads=12,
                       intermediate_size=3072, id2label={0: "real", 1: "fake"}, label2id={"real": 0, "fake": 1})
    ViTForImageClassification(config).save_pretrained(folder)
    ViTImageProcessor(size={"height": 224, "width": 224}).save_pretrained(folder)
    return folder


def detector_figures(work: Path, tiny: bool) -> None:
    import numpy as np
    from PIL import Image

    from m3d_agents.media.images import load_image
    from m3d_agents.tools.forensics.fusion import fuse, run_forensics
    from m3d_agents.tools.forensics.learned import analyse_learned

    count = 4 if tiny else DETECTOR_IMAGES
    rng = np.random.default_rng(0)
    images = []
    for index in range(count):
        path = work / f"photo{index}.jpg"
        Image.fromarray(rng.integers(0, 255, (720, 1280, 3), dtype=np.uint8)).save(path, quality=90)
        images.append(load_image(path))
    model = detector(work / "detector", tiny)
    analyse_learned(images[0], path=model)  # loads the checkpoint once (on the GPU when there is one)
    started = time.perf_counter()
    results = [analyse_learned(image, path=model) for image in images]
    seconds = time.perf_counter() - started
    where = "CUDA" if gpu() is not None else "CPU"
    line(f"learned detector images per s ({'one-layer ViT' if tiny else 'ViT-Base/16'}, {where}, 1280x720, score and heat map)",
         f"{count / seconds:.1f}")
    assert all(r.informative for r in results)
    started = time.perf_counter()
    for image in images:
        fuse(list(run_forensics(image).values()))
    line("forensic tools images per s (ELA, JPEG, EXIF, noise and their fusion; NumPy on the CPU, 1280x720)",
         f"{count / (time.perf_counter() - started):.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tiny", action="store_true", help="a 2-layer model on the CPU: the same steps, in a few minutes")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    warnings.filterwarnings("ignore")
    import peft
    import torch
    import transformers
    import trl

    from tests.support.videos import make_clip

    tiny = args.tiny or not torch.cuda.is_available()
    if not args.tiny and tiny:
        line("note", "no GPU visible: running --tiny")
    device = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    line("GPU", device)
    line("versions", f"torch {torch.__version__}, transformers {transformers.__version__}, trl {trl.__version__}, peft {peft.__version__}")
    line("model", "a 2-layer, 32-wide Qwen2.5-VL, images at most 56x56 (random weights, fp32, CPU)" if tiny else
         "Qwen2.5-VL-7B's architecture, Qwen2.5-VL's image bounds (random weights, bf16, made on the GPU)")
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as folder:
        work = Path(folder)
        model_dir, processor = build_policy(work / "model", tiny)
        clip = make_clip(work / "clip.mp4", seconds=8, fps=10, size=(1280, 720))
        line("clip", "1280x720, 8 s")
        grpo_figures(model_dir, processor, clip, work, tiny)
        sft_figures(model_dir, processor, clip, work, tiny)
        detector_figures(work, tiny)
    line("total s", f"{time.perf_counter() - started:.1f}")


if __name__ == "__main__":
    main()
