"""The peak GPU memory of a training run, estimated from the model's configuration and the run's settings.

One formula serves three readers: ``m3d train sft|grpo`` checks it against the free memory of the
GPU before a model is loaded (16 GB of weights are a long wait to learn that a run cannot fit);
``benchmarks/train_step.py`` prints it for Qwen2.5-VL-7B at the paper's lengths; and
``benchmarks/gpu_check.py`` prints it beside the peak a real step measured, at the lengths that
step had. It is arithmetic, and it says what it counts:

* the weights in the run's dtype, and what training keeps per trained parameter: with LoRA the
  adapter in fp32 with its gradients and two AdamW moments (16 bytes a parameter), the base frozen;
  training every weight, gradients and two moments in the weights' dtype (the Trainer keeps no fp32
  copy of bf16 weights); under DeepSpeed ZeRO-2/3 (bf16 weights and gradients, fp32 master weights
  and moments, 16 bytes a parameter) sharded over the processes, the weights too under ZeRO-3;
* GRPO's frozen reference: nothing with LoRA (the base with the adapter off), a second copy of the
  weights otherwise (sharded under ZeRO-3);
* activations of one sequence (a batch of 1 per device, the paper's), with gradient checkpointing
  each layer's input kept and one layer recomputed at a time (about 16 hidden-sized and 3
  MLP-sized tensors a token, attention memory linear as in FlashAttention and SDPA), likewise for the
  vision tower over the image patches (4 a token on Qwen-VL), and the fp32 log-softmax of the
  logits the loss reads with its gradient;
* GRPO's rollouts on HF ``generate``: the KV cache of the turns generated together, the prefill of
  one layer for them (about 6 hidden-sized and 3 MLP-sized tensors a token), and under ZeRO-3 the policy gathered whole for generation (TRL's
  ``ds3_gather_for_generation``). A vLLM server generates elsewhere.

The peak is the larger of the training phase and the generation phase; what the CUDA caching
allocator fragments and the CUDA context (about 0.5 GiB) come on top.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from typing import Any, Literal, Sequence

from debates.strategies.factguard.training.scale import LoraSettings, ScaleSettings

GIB = 1024**3
PATCHES_PER_IMAGE_TOKEN = 4
"""Qwen-VL merges 2x2 vision patches into one language-model token."""
DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4}
TRAINING_LAYER = (16, 3)
"""Hidden-sized and MLP-sized tensors a token holds in one layer's forward and backward pass."""
INFERENCE_LAYER = (6, 3)
"""Likewise in a forward pass without gradients (generate's prefill)."""


@dataclass(frozen=True)
class ModelSizes:
    """What the formula reads of a model: parameter counts and the sizes of its layers."""

    parameters: int
    vision_parameters: int
    lora_parameters: int
    """Trainable parameters of a LoRA adapter with the run's settings (0 without LoRA)."""
    hidden: int
    intermediate: int
    layers: int
    vocab: int
    kv_heads: int
    head_dim: int
    vision_hidden: int = 0
    vision_intermediate: int = 0
    vision_depth: int = 0


@dataclass(frozen=True)
class Workload:
    """How long what one GPU works on is."""

    sequence: int
    """Tokens of one trained sequence: the first prompt and the completion (the model's turns and the tool results)."""
    logits: int
    """Tokens whose logits the loss reads: GRPO's completion, SFT's whole row."""
    image_tokens: int = 0
    """Tokens of the sequence that stand for images."""
    generation_rows: int = 0
    """Turns HF ``generate`` runs together on this GPU (0: none here: SFT, or a vLLM server)."""
    generation_prompt: int = 0
    """Tokens of the longest prompt a generated turn reads (its prefill); 0: the whole sequence."""


@dataclass(frozen=True)
class Layout:
    """How the training state is spread: ``processes`` GPUs, DeepSpeed ZeRO ``stage`` (0: none)."""

    processes: int = 1
    stage: Literal[0, 2, 3] = 0

    def describe(self) -> str:
        return f"ZeRO-{self.stage} on {self.processes} GPUs" if self.stage else ("one GPU" if self.processes == 1 else
                                                                               f"{self.processes} GPUs, no ZeRO")


@dataclass(frozen=True)
class MemoryEstimate:
    """The estimate per GPU, by part, in bytes."""

    weights: float
    trained_state: float
    reference: float
    activations: float
    generation: float
    setup: str

    @property
    def training(self) -> float:
        return self.weights + self.trained_state + self.reference + self.activations

    @property
    def generating(self) -> float:
        return self.weights + self.trained_state + self.reference + self.generation

    @property
    def peak(self) -> float:
        return max(self.training, self.generating)

    @property
    def peak_gib(self) -> float:
        return self.peak / GIB

    def describe(self) -> str:
        parts = [f"weights {self.weights / GIB:.1f}", f"trained state {self.trained_state / GIB:.1f}"]
        if self.reference:
            parts.append(f"reference {self.reference / GIB:.1f}")
        parts.append(f"activations {self.activations / GIB:.1f}")
        if self.generation:
            parts.append(f"generation {self.generation / GIB:.1f}")
        return f"{self.peak_gib:.1f} GiB per GPU ({self.setup}: {', '.join(parts)} GiB)"


def _architecture(config: Any) -> Any:
    import transformers

    for name in getattr(config, "architectures", None) or []:
        found = getattr(transformers, name, None)
        if found is not None:
            return found
    if getattr(config, "vision_config", None) is not None:
        return transformers.AutoModelForImageTextToText
    return transformers.AutoModelForCausalLM


def model_sizes(config: Any, lora: LoraSettings | None = None) -> ModelSizes:
    """Count the parameters of the model ``config`` describes, built on the meta device (nothing is allocated)."""
    import torch

    architecture = _architecture(config)
    with torch.device("meta"):
        model = architecture._from_config(config) if hasattr(architecture, "_from_config") else architecture.from_config(config)
    total = sum(p.numel() for p in model.parameters())
    visual = next((module for name, module in model.named_modules() if name.endswith("visual")), None)
    vision = sum(p.numel() for p in visual.parameters()) if visual is not None else 0
    adapter = 0
    if lora is not None:
        from peft import LoraConfig, get_peft_model

        adapted = get_peft_model(model, LoraConfig(r=lora.r, lora_alpha=lora.alpha, target_modules=lora.target_modules,
                                                   task_type="CAUSAL_LM"))
        adapter = sum(p.numel() for p in adapted.parameters() if p.requires_grad)
    text = config.get_text_config()
    heads = int(text.num_attention_heads)
    head_dim = int(getattr(text, "head_dim", None) or text.hidden_size // heads)
    seen = getattr(config, "vision_config", None)
    return ModelSizes(
        parameters=total, vision_parameters=vision, lora_parameters=adapter, hidden=int(text.hidden_size),
        intermediate=int(text.intermediate_size), layers=int(text.num_hidden_layers), vocab=int(text.vocab_size),
        kv_heads=int(getattr(text, "num_key_value_heads", None) or heads), head_dim=head_dim,
        vision_hidden=int(getattr(seen, "hidden_size", 0) or 0) if seen is not None else 0,
        vision_intermediate=int(getattr(seen, "intermediate_size", 0) or 0) if seen is not None else 0,
        vision_depth=int(getattr(seen, "depth", None) or getattr(seen, "num_hidden_layers", 0) or 0) if seen is not None else 0,
    )


def activations(sizes: ModelSizes, workload: Workload, dtype_bytes: int, checkpointing: bool) -> float:
    """Bytes of the activations of one sequence's forward and backward pass (see the module docstring)."""
    sequence, w = workload.sequence, dtype_bytes
    hidden, mlp = TRAINING_LAYER
    one_layer = sequence * (hidden * sizes.hidden + mlp * sizes.intermediate) * w
    text = sequence * sizes.hidden * w * sizes.layers + one_layer if checkpointing else one_layer * sizes.layers
    patches = PATCHES_PER_IMAGE_TOKEN * workload.image_tokens if sizes.vision_depth else 0
    one_block = patches * (hidden * sizes.vision_hidden + mlp * sizes.vision_intermediate) * w
    vision = patches * sizes.vision_hidden * w * sizes.vision_depth + one_block if checkpointing else one_block * sizes.vision_depth
    logits = workload.logits * sizes.vocab * 4 * 2
    return float(text + vision + logits)


def generation(sizes: ModelSizes, workload: Workload, dtype_bytes: int) -> float:
    """Bytes HF ``generate`` adds for ``generation_rows`` turns at once: their KV cache at the full sequence, and the
    prefill of one layer (and one vision block over their images) at a time."""
    rows = workload.generation_rows
    if not rows:
        return 0.0
    w = dtype_bytes
    prompt = workload.generation_prompt or workload.sequence
    hidden, mlp = INFERENCE_LAYER
    cache = rows * workload.sequence * sizes.layers * 2 * sizes.kv_heads * sizes.head_dim * w
    prefill = rows * prompt * (hidden * sizes.hidden + mlp * sizes.intermediate) * w
    patches = PATCHES_PER_IMAGE_TOKEN * workload.image_tokens if sizes.vision_depth else 0
    vision = rows * patches * (hidden * sizes.vision_hidden + mlp * sizes.vision_intermediate) * w
    return float(cache + prefill + vision)


def estimate(sizes: ModelSizes, scale: ScaleSettings, workload: Workload, layout: Layout = Layout(), *,
             reference: bool = False, dtype: str | None = None) -> MemoryEstimate:
    """The peak per GPU of a run with these settings on this workload (``reference``: GRPO with β > 0)."""
    chosen = dtype or scale.resolved_dtype()
    w = DTYPE_BYTES[chosen]
    total, shards = sizes.parameters, max(1, layout.processes)
    if scale.lora is not None:
        weights = w * total / shards if layout.stage == 3 else w * total
        trained = 16.0 * sizes.lora_parameters
        ref = 0.0
        what = f"{chosen} weights, LoRA r={scale.lora.r}"
    elif layout.stage:
        weights = w * total / shards if layout.stage == 3 else w * total
        trained = (2 + 4 + 8) * total / shards  # gradients, fp32 master weights and moments, sharded
        ref = (w * total / shards if layout.stage == 3 else w * total) if reference else 0.0
        what = f"{chosen} weights, all trained"
    else:
        weights = w * total
        trained = 3.0 * w * total  # gradients and two AdamW moments in the weights' dtype
        ref = w * total if reference else 0.0
        what = f"{chosen} weights, all trained"
    acts = activations(sizes, workload, w, scale.gradient_checkpointing)
    gen = generation(sizes, workload, w)
    if workload.generation_rows and layout.stage == 3:
        gen += w * total  # the whole policy, gathered for generate
    rows = (f", {workload.generation_rows} turn{'s' if workload.generation_rows > 1 else ''} generated at once"
            if workload.generation_rows else "")
    setup = f"{what}, {layout.describe()}{', gradient checkpointing' if scale.gradient_checkpointing else ''}{rows}"
    return MemoryEstimate(weights=weights, trained_state=trained, reference=ref, activations=acts, generation=gen, setup=setup)


def launched_layout() -> Layout:
    """The layout ``accelerate launch`` set up for this process (its environment), else one GPU."""
    processes = max(1, int(os.environ.get("WORLD_SIZE", "1")))
    stage = 0
    if os.environ.get("ACCELERATE_USE_DEEPSPEED", "").lower() == "true":
        stage = 3 if os.environ.get("ACCELERATE_DEEPSPEED_ZERO_STAGE", "") == "3" else 2
    return Layout(processes=processes, stage=stage)  # type: ignore[arg-type]


@dataclass(frozen=True)
class GpuMemory:
    index: int
    name: str
    free: int
    total: int

    def describe(self) -> str:
        return f"{self.free / GIB:.1f} of {self.total / GIB:.1f} GiB free on cuda:{self.index} ({self.name})"


def visible_gpus() -> list[GpuMemory]:
    """The free and total memory of each GPU this process can see."""
    try:
        import torch
    except ImportError:
        return []
    if not torch.cuda.is_available():
        return []
    found = []
    for index in range(torch.cuda.device_count()):
        free, total = torch.cuda.mem_get_info(index)
        found.append(GpuMemory(index, torch.cuda.get_device_name(index), int(free), int(total)))
    return found


HEADROOM = 1 * GIB
"""Kept free beyond the estimate: the CUDA context and what the caching allocator fragments."""


@dataclass(frozen=True)
class Alternative:
    """A change of settings and what the estimate becomes with it."""

    change: str
    estimate: MemoryEstimate


@dataclass(frozen=True)
class MemoryCheck:
    """The estimate, the GPU this process trains on, and, when it does not fit, the settings that would."""

    estimate: MemoryEstimate
    gpu: GpuMemory | None
    options: list[Alternative]

    @property
    def fits(self) -> bool:
        return self.gpu is None or self.estimate.peak + HEADROOM <= self.gpu.free

    def report(self) -> str:
        where = self.gpu.describe() if self.gpu is not None else "no GPU visible, so nothing to compare it with (training runs on the CPU)"
        return f"memory: estimated peak {self.estimate.describe()}; {where}"

    def refusal(self) -> str:
        assert self.gpu is not None
        options = "; ".join(f"{a.change}: {a.estimate.peak_gib:.1f} GiB" for a in self.options)
        return (f"memory: the estimated peak of {self.estimate.peak_gib:.1f} GiB per GPU ({self.estimate.setup}) and "
                f"{HEADROOM / GIB:.0f} GiB of headroom do not fit in the {self.gpu.free / GIB:.1f} GiB free on cuda:{self.gpu.index} "
                f"({self.gpu.name}); would fit: {options or 'none of LoRA, ZeRO-3 or fewer turns generated at once'}; "
                "--force starts anyway")


def check_memory(config: Any, scale: ScaleSettings, workload: Workload, *, reference: bool = False, generations: int | None = None,
                 layout: Layout | None = None, gpus: Sequence[GpuMemory] | None = None) -> MemoryCheck:
    """Estimate the peak of the run on this process's GPU (``LOCAL_RANK``, else the first visible one) and compare.

    ``config`` is the model's transformers configuration; ``generations`` is GRPO's G (None for SFT).
    """
    layout = layout or launched_layout()
    gpus = list(visible_gpus() if gpus is None else gpus)
    index = int(os.environ.get("LOCAL_RANK", "0"))
    gpu = next((g for g in gpus if g.index == index), gpus[0] if gpus else None)
    cache: dict[bool, ModelSizes] = {}

    def sizes_of(lora: LoraSettings | None) -> ModelSizes:
        if (lora is not None) not in cache:
            cache[lora is not None] = model_sizes(config, lora)
        return cache[lora is not None]

    # Estimated in the dtype the GPU will train in, whatever this machine resolves "auto" to.
    dtype = scale.dtype if scale.dtype != "auto" else ("bf16" if gpu is not None else scale.resolved_dtype())
    chosen = scale.model_copy(update={"dtype": dtype})
    found = estimate(sizes_of(chosen.lora), chosen, workload, layout, reference=reference)
    check = MemoryCheck(found, gpu, [])
    if check.fits or gpu is None:
        return check
    free = gpu.free

    def fits(peak: float) -> bool:
        return peak + HEADROOM <= free

    options: list[Alternative] = []
    if chosen.lora is None:
        lora = chosen.model_copy(update={"lora": LoraSettings()})
        with_lora = estimate(sizes_of(lora.lora), lora, workload, layout, reference=reference)
        if fits(with_lora.peak):
            options.append(Alternative(f"--lora (r={LoraSettings().r})", with_lora))
    if layout.stage != 3:
        processes = max(len(gpus), layout.processes, 2) if len(gpus) > 1 else 8
        spread = workload  # each process generates its share of a group's G rollouts
        if workload.generation_rows and generations:
            spread = replace(workload, generation_rows=min(workload.generation_rows, max(1, generations // processes)))
        sharded = estimate(sizes_of(chosen.lora), chosen, spread, Layout(processes=processes, stage=3), reference=reference)
        if fits(sharded.peak):
            options.append(Alternative(f"ZeRO-3 on {processes} GPUs (accelerate launch --config_file "
                                       "\"$(m3d train accelerate-config --zero 3)\")", sharded))
    rows = workload.generation_rows
    for fewer in range(rows - 1, 0, -1):
        smaller = estimate(sizes_of(chosen.lora), chosen, replace(workload, generation_rows=fewer), layout, reference=reference)
        if fits(smaller.peak):
            change = f"--rollout-batch-size {fewer}"
            if generations is not None and 2 <= fewer < generations:
                change += f" or -G {fewer} (fewer generations than the paper's 8)"
            options.append(Alternative(change, smaller))
            break
    return MemoryCheck(found, gpu, options)
