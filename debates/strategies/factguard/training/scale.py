"""What it takes to train a 7B vision-language model at the paper's scale: precision, memory savers, adapters.

The paper trains Qwen2.5-VL-7B with BF16, DeepSpeed, gradient checkpointing and FlashAttention on
8 H100s (App. A.1). These settings are shared by SFT and GRPO and map onto TRL's configuration:
the weights are loaded in the chosen dtype (``model_init_kwargs``), the trainer runs in that
precision, and LoRA through ``peft`` is an option for one GPU (ours; the paper trains all weights).
DeepSpeed is not set here: ``accelerate launch --config_file`` with one of the files in
``training/accelerate/`` turns it on for every process (see docs/guides/training-factguard.md).
"""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from m3d_agents.errors import InputError

Dtype = Literal["auto", "bf16", "fp16", "fp32"]
Attention = Literal["sdpa", "eager", "flash_attention_2"]


class LoraSettings(BaseModel):
    """A LoRA adapter instead of full fine-tuning (ours, for one GPU; the paper trains every weight)."""

    model_config = ConfigDict(extra="forbid")

    r: int = Field(64, ge=1, description="the adapter's rank")
    alpha: int = Field(128, ge=1, description="the adapter's scaling numerator (lora_alpha)")
    dropout: float = Field(0.05, ge=0, lt=1)
    target_modules: str | list[str] = Field("all-linear", description="the layers that get adapters (peft's target_modules)")


class ScaleSettings(BaseModel):
    """Precision and memory settings of a training run."""

    model_config = ConfigDict(extra="forbid")

    dtype: Dtype = Field("auto", description="weights and compute precision; auto: bf16 on a GPU that has it (the paper's), else fp32")
    gradient_checkpointing: bool = Field(True, description="recompute activations in the backward pass (the paper's, App. A.1)")
    attn_implementation: Attention | None = Field(
        None, description="attention kernel; flash_attention_2 is the paper's FlashAttention (needs flash-attn); None: the model's default")
    lora: LoraSettings | None = Field(None, description="train a LoRA adapter instead of all weights (ours, for one GPU)")

    def resolved_dtype(self) -> Literal["bf16", "fp16", "fp32"]:
        if self.dtype != "auto":
            return self.dtype
        import torch

        return "bf16" if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else "fp32"

    def model_init_kwargs(self) -> dict[str, Any]:
        """How TRL loads the model: in the run's dtype, with the chosen attention kernel."""
        import torch

        dtype = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[self.resolved_dtype()]
        kwargs: dict[str, Any] = {"dtype": dtype}
        if self.attn_implementation is not None:
            kwargs["attn_implementation"] = self.attn_implementation
        return kwargs

    def trainer_args(self) -> dict[str, Any]:
        """The precision and memory flags of TRL's configuration."""
        import torch

        dtype = self.resolved_dtype()
        return dict(
            bf16=dtype == "bf16", fp16=dtype == "fp16", use_cpu=not torch.cuda.is_available(),
            gradient_checkpointing=self.gradient_checkpointing, model_init_kwargs=self.model_init_kwargs(),
        )

    def peft_config(self) -> Any:
        """peft's ``LoraConfig``, or None for full fine-tuning."""
        if self.lora is None:
            return None
        try:
            from peft import LoraConfig
        except ImportError:
            raise InputError("lora", "LoRA needs peft: .venv/bin/pip install -e '.[train]'") from None
        return LoraConfig(r=self.lora.r, lora_alpha=self.lora.alpha, lora_dropout=self.lora.dropout,
                          target_modules=self.lora.target_modules, task_type="CAUSAL_LM")


def world_size() -> int:
    """How many processes ``accelerate launch`` started (1 without it)."""
    return max(1, int(os.environ.get("WORLD_SIZE", "1")))
