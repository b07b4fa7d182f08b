"""Supervised fine-tuning on exported trajectories (paper §3.4, Eq. 4), on TRL's ``SFTTrainer``.

The loss covers the assistant's tokens only (``assistant_only_loss``, through the chat template's
``{% generation %}`` marks): tool results and prompts are context, not targets. That masking is our
choice; the paper's Eq. 4 writes the observations inside the trajectory without saying.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from m3d_agents.errors import InputError


class SFTSettings(BaseModel):
    learning_rate: float = Field(1e-5, gt=0, description="unstated in the paper; ours")
    num_train_epochs: float = Field(1.0, gt=0)
    gradient_accumulation_steps: int = Field(8, ge=1, description="unstated in the paper; ours")
    max_length: int = Field(16384, ge=16)
    max_steps: int = -1
    seed: int = 0


def text_content(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") if p.get("type") == "text" else "[image]" for p in content)


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The ``messages`` of each exported row, as text (a text model sees ``[image]`` for an image)."""
    if not path.is_file():
        raise InputError("data", f"{path} does not exist; write it with m3d export-sft")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            messages = json.loads(line)["messages"]
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{path.name}:{number}", f"not an exported row with messages ({exc})") from exc
        rows.append({"messages": [{"role": m["role"], "content": text_content(m["content"])} for m in messages]})
    if not rows:
        raise InputError("data", f"{path} has no rows")
    return rows


def train_sft(model_dir: Path, data: Path, output_dir: Path, settings: SFTSettings | None = None, **overrides: Any) -> Any:
    """Run SFT and return the trainer."""
    import torch
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    settings = settings or SFTSettings()
    values: dict[str, Any] = dict(
        output_dir=str(output_dir), learning_rate=settings.learning_rate, num_train_epochs=settings.num_train_epochs,
        per_device_train_batch_size=1, gradient_accumulation_steps=settings.gradient_accumulation_steps,
        max_length=settings.max_length, max_steps=settings.max_steps, assistant_only_loss=True, logging_steps=1,
        save_strategy="no", report_to=[], seed=settings.seed, use_cpu=not torch.cuda.is_available(), bf16=False,
        disable_tqdm=True,
    )
    values.update(overrides)
    trainer = SFTTrainer(model=str(model_dir), args=SFTConfig(**values), train_dataset=Dataset.from_list(read_rows(data)))
    trainer.train()
    return trainer
