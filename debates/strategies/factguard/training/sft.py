"""Supervised fine-tuning on exported trajectories (paper §3.4, Eq. 4, App. A.1), on TRL's ``SFTTrainer``.

A vision-language model is trained on what it saw: each row's images (the overview frames, the
ClipScout grid) go through the model's processor with the conversation, so the loss is over the
model's turns as they were conditioned on the pixels. A text model gets ``[image]`` in their place,
the only way it could have seen them. The loss covers the assistant's tokens only
(``assistant_only_loss``, through the training template's ``{% generation %}`` marks): tool results
and prompts are context, not targets. That masking is our choice; the paper's Eq. 4 writes the
observations inside the trajectory without saying. Every row is checked before training: a row
whose mask has no token is refused with the model and the template named.

The paper's SFT runs BF16 with DeepSpeed, gradient checkpointing and FlashAttention, a batch of 1
per device with accumulation, one epoch (App. A.1); :class:`ScaleSettings` holds those settings.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from pydantic import BaseModel, ConfigDict, Field

from debates.fidelity import StatedDeparture
from debates.strategies.factguard.training.adapters import merged_model
from debates.strategies.factguard.training.chat_template import TrainingTemplate, training_template
from debates.strategies.factguard.training.departures import training_departures
from debates.strategies.factguard.training.memory import Workload
from debates.strategies.factguard.training.rendering import (assistant_mask, image_tokens, is_vision, load_processing_class, render,
                                                             text_only)
from debates.strategies.factguard.training.scale import ScaleSettings
from m3d_agents.config_types import Seed
from m3d_agents.errors import InputError


class SFTSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    learning_rate: float = Field(1e-5, gt=0, description="unstated in the paper; ours")
    num_train_epochs: float = Field(1.0, gt=0, description="the paper's one epoch")
    gradient_accumulation_steps: int = Field(8, ge=1, description="the paper accumulates without saying how much; ours 8")
    max_length: int = Field(16384, ge=16, description="tokens per row, images included")
    max_steps: int = -1
    seed: Seed = Field(0, description="the trainer's seed (data order, initialisation)")
    scale: ScaleSettings = Field(default_factory=ScaleSettings)


@dataclass(frozen=True)
class SFTRow:
    messages: list[dict[str, Any]]
    images: list[str]


def read_rows(path: Path) -> list[SFTRow]:
    """The ``messages`` and ``images`` of each exported row; every image file must exist."""
    if not path.is_file():
        raise InputError("data", f"{path} does not exist; write it with m3d export-sft")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            messages = [{"role": str(m["role"]), "content": m["content"]} for m in data["messages"]]
            images = [str(p) for p in data.get("images") or []]
        except (ValueError, KeyError, TypeError) as exc:
            raise InputError(f"{path.name}:{number}", f"not an exported row with messages ({exc})") from exc
        placeholders = sum(1 for m in messages if not isinstance(m["content"], str) for p in m["content"] if p.get("type") == "image")
        if placeholders != len(images):
            raise InputError(f"{path.name}:{number}", f"{placeholders} image placeholders but {len(images)} images")
        missing = [p for p in images if not Path(p).is_file()]
        if missing:
            raise InputError(f"{path.name}:{number}", f"image {missing[0]} does not exist")
        rows.append(SFTRow(messages, images))
    if not rows:
        raise InputError("data", f"{path} has no rows")
    return rows


def with_images(messages: list[dict[str, Any]], images: list[Any]) -> list[dict[str, Any]]:
    """The messages with each image placeholder holding its image, in order."""
    queue = list(images)
    out = []
    for message in messages:
        content = message["content"]
        if not isinstance(content, str):
            content = [{"type": "image", "image": queue.pop(0)} if p.get("type") == "image" else p for p in content]
        out.append({"role": message["role"], "content": content})
    return out


def as_parts(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Content as a list of parts: a column of messages must not mix strings and lists."""
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [{"type": "image"} if p.get("type") == "image" else {"type": "text", "text": p["text"]} for p in content]


@dataclass
class SFTRows:
    """TRL's conversational rows, with the length of the longest (what the memory check reads)."""

    rows: list[dict[str, Any]]
    longest: int = 0
    image_tokens: int = 0
    """The most tokens standing for images in one row."""


def dataset_rows(rows: list[SFTRow], processing_class: Any, template: TrainingTemplate) -> SFTRows:
    """TRL's conversational rows, each checked to train at least one token of the model's."""
    from PIL import Image

    vision = is_vision(processing_class)
    out, longest, most_images = [], 0, 0
    for number, row in enumerate(rows, start=1):
        images = [Image.open(p).convert("RGB") for p in row.images]
        filled = with_images(row.messages, images)
        rendered = render(processing_class, template, filled, with_mask=True)
        template.require_tokens(rendered.mask, f"row {number}")
        longest, most_images = max(longest, len(rendered.ids)), max(most_images, image_tokens(processing_class, rendered.ids))
        if vision:
            out.append({"messages": [{"role": m["role"], "content": as_parts(m["content"])} for m in row.messages], "images": images})
        else:
            out.append({"messages": text_only(filled)})
    return SFTRows(out, longest, most_images)


@dataclass
class SFTPlan:
    """What is known before the model loads: its folder, how it reads, the rows, their longest, the departures."""

    model_dir: Path
    processing_class: Any
    template: TrainingTemplate
    data: SFTRows
    workload: Workload
    departures: list[StatedDeparture]


def plan_sft(model_dir: Path, data: Path, settings: SFTSettings | None = None, *, processing_class: Any = None,
             chat_template: Path | None = None) -> SFTPlan:
    """Everything before the model loads (a folder holding an adapter is merged into its base first)."""
    settings = settings or SFTSettings()
    model_dir = merged_model(Path(model_dir))
    processing_class = processing_class if processing_class is not None else load_processing_class(model_dir)
    template = training_template(processing_class, str(model_dir), chat_template)
    processing_class = copy.copy(processing_class)  # TRL renders with the processing class's own template: give it ours
    processing_class.chat_template = template.text
    rows = dataset_rows(read_rows(data), processing_class, template)
    longest = min(rows.longest, settings.max_length)
    workload = Workload(sequence=longest, logits=longest, image_tokens=rows.image_tokens)
    departures = training_departures(settings.scale, settings.scale.resolved_dtype())
    return SFTPlan(model_dir, processing_class, template, rows, workload, departures)


def vision_collator(processing_class: Any, template: TrainingTemplate, settings: SFTSettings) -> Any:
    """TRL's collator for vision-language rows, with the loss on the model's own tokens placed by
    :func:`~debates.strategies.factguard.training.rendering.assistant_mask`, which reads the same on every
    transformers version (earlier processors misplace their own mask once images are expanded)."""
    from trl.trainer.sft_trainer import DataCollatorForVisionLanguageModeling

    class AssistantTokens(DataCollatorForVisionLanguageModeling):
        def _collate_language_modeling(self, examples: list[dict[str, Any]]) -> dict[str, Any]:
            output = super()._collate_language_modeling(examples)
            for row, example in enumerate(examples):
                attended = output["attention_mask"][row].bool()
                ids = output["input_ids"][row][attended].tolist()
                mask = assistant_mask(self.processor, template, with_images(example["messages"], list(example["images"])), ids)
                positions = attended.nonzero().squeeze(-1)
                output["labels"][row][positions[[m == 0 for m in mask]]] = -100
            return output

    return AssistantTokens(processor=processing_class, max_length=settings.max_length, completion_only_loss=False,
                           assistant_only_loss=False, chat_template=template.text)


def train_sft(model_dir: Path, data: Path, output_dir: Path, settings: SFTSettings | None = None, *, processing_class: Any = None,
              chat_template: Path | None = None, plan: SFTPlan | None = None, callbacks: Sequence[Any] = (),
              **overrides: Any) -> Any:
    """Run SFT and return the trainer (``plan``: :func:`plan_sft`'s, when the caller made it first; ``callbacks``:
    transformers ``TrainerCallback``s)."""
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    settings = settings or SFTSettings()
    plan = plan or plan_sft(model_dir, data, settings, processing_class=processing_class, chat_template=chat_template)
    values: dict[str, Any] = dict(
        output_dir=str(output_dir), learning_rate=settings.learning_rate, num_train_epochs=settings.num_train_epochs,
        per_device_train_batch_size=1, gradient_accumulation_steps=settings.gradient_accumulation_steps,
        max_length=settings.max_length, max_steps=settings.max_steps, logging_steps=1,
        # The model's own tokens only: TRL's mask for a text model, ours for a vision-language one (see vision_collator).
        assistant_only_loss=not is_vision(plan.processing_class),
        save_strategy="no", report_to=[], seed=settings.seed, disable_tqdm=True, **settings.scale.trainer_args(),
    )
    values.update(overrides)
    collator = vision_collator(plan.processing_class, plan.template, settings) if is_vision(plan.processing_class) else None
    trainer = SFTTrainer(model=str(plan.model_dir), args=SFTConfig(**values), train_dataset=Dataset.from_list(plan.data.rows),
                         processing_class=plan.processing_class, peft_config=settings.scale.peft_config(),
                         callbacks=list(callbacks) or None, data_collator=collator)
    trainer.train()
    return trainer
