"""How a conversation the FactGuard loop recorded becomes what a model is trained on: token ids, the mask
of the model's own tokens, and the images in the order the ids hold their placeholders.

A vision-language model comes with a processor: it expands each image into the model's vision
tokens and returns the pixel values (and, for Qwen2-VL-style models, the image grids and the
multimodal token types) that must reach the forward pass together with the ids. A text model
comes with a tokenizer, and an image becomes the text ``[image]``: that is the only way it could
have seen one during the rollout too. Both paths render through the one training template
(:mod:`~debates.strategies.factguard.training.chat_template`).
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from autogen_core import Image as AgentImage
from autogen_core.models import AssistantMessage, LLMMessage, SystemMessage, UserMessage
from PIL import Image

from debates.strategies.factguard.training.chat_template import TrainingTemplate
from m3d_agents.errors import InputError

IMAGE_TEXT = "[image]"
TOKEN_FIELDS = ("mm_token_type_ids", "token_type_ids")
"""Processor outputs with one value per token: they follow the ids through padding and slicing."""
SKIPPED_FIELDS = ("input_ids", "attention_mask", "assistant_masks", "offset_mapping")


def load_processing_class(model_dir: Any) -> Any:
    """The model's processor (a vision-language model) or its tokenizer (a text model)."""
    from transformers import AutoProcessor

    try:
        return AutoProcessor.from_pretrained(str(model_dir))
    except ImportError as exc:
        # Qwen2.5-VL's processor includes a video processor that needs torchvision.
        raise InputError("model", f"{model_dir}: its processor cannot load ({' '.join(str(exc).split())[:300]})") from None
    except OSError as exc:
        raise InputError("model", f"{model_dir} is not a transformers model folder with a tokenizer ({type(exc).__name__})") from None


def tokenizer_of(processing_class: Any) -> Any:
    """The tokenizer inside a processor, or the tokenizer itself: pad and end tokens and decoding live there."""
    return getattr(processing_class, "tokenizer", None) or processing_class


def is_vision(processing_class: Any) -> bool:
    """Whether the processing class can turn images into model inputs (a processor with an image processor)."""
    return getattr(processing_class, "image_processor", None) is not None


def image_token_id(processing_class: Any) -> int | None:
    """The id of the placeholder token each image expands into, when the processor has one."""
    given = getattr(processing_class, "image_token_id", None)
    if isinstance(given, int):
        return given
    token = getattr(processing_class, "image_token", None)
    if not isinstance(token, str):
        return None
    tokenizer = tokenizer_of(processing_class)
    found = tokenizer.convert_tokens_to_ids(token)
    return found if isinstance(found, int) and found != tokenizer.unk_token_id else None


def llm_template_messages(messages: Sequence[LLMMessage]) -> list[dict[str, Any]]:
    """AutoGen messages as chat-template messages, images as PIL images in their places."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            out.append({"role": "system", "content": message.content})
        elif isinstance(message, UserMessage):
            if isinstance(message.content, str):
                out.append({"role": "user", "content": message.content})
            else:
                out.append({"role": "user", "content": [
                    {"type": "image", "image": part.image} if isinstance(part, AgentImage) else {"type": "text", "text": str(part)}
                    for part in message.content
                ]})
        elif isinstance(message, AssistantMessage) and isinstance(message.content, str):
            out.append({"role": "assistant", "content": message.content})
        else:
            raise TypeError(f"training renders system, user and assistant text messages, not {type(message).__name__}")
    return out


def recorded_template_messages(messages: Sequence[Mapping[str, Any]], images: Mapping[str, bytes]) -> list[dict[str, Any]]:
    """Messages a ledger recorded (images named by hash, bytes in ``images``) as chat-template messages."""
    out: list[dict[str, Any]] = []
    for message in messages:
        content = message["content"]
        if not isinstance(content, str):
            content = [
                {"type": "image", "image": Image.open(io.BytesIO(images[part["image"].removeprefix("images/").removesuffix(".png")]))}
                if part["type"] == "image" else {"type": "text", "text": part["text"]}
                for part in content
            ]
        out.append({"role": message["role"], "content": content})
    return out


def text_only(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The messages a text model reads: every image replaced by ``[image]``."""
    out = []
    for message in messages:
        content = message["content"]
        if not isinstance(content, str):
            content = "".join(part["text"] if part["type"] == "text" else IMAGE_TEXT for part in content)
        out.append({"role": message["role"], "content": content})
    return out


def text_of(content: str | Sequence[Mapping[str, Any]]) -> str:
    return content if isinstance(content, str) else "".join(p["text"] for p in content if p["type"] == "text")


def images_in(messages: Sequence[Mapping[str, Any]]) -> list[Image.Image]:
    return [part["image"] for m in messages if not isinstance(m["content"], str) for part in m["content"] if part["type"] == "image"]


@dataclass
class Rendered:
    """One conversation as the model reads it."""

    ids: list[int]
    mask: list[int] = field(default_factory=list)
    """1 for the model's own tokens (empty unless the mask was asked for)."""
    images: list[Image.Image] = field(default_factory=list)
    features: dict[str, Any] = field(default_factory=dict)
    """The processor's other outputs (pixel values, image grids, per-token types), batch dimension removed."""


def render(
    processing_class: Any,
    template: TrainingTemplate,
    messages: Sequence[Mapping[str, Any]],
    *,
    add_generation_prompt: bool = False,
    with_mask: bool = False,
) -> Rendered:
    """Token ids of ``messages`` under ``template``; on a processor, with its image features too."""
    if not is_vision(processing_class):
        rendered = processing_class.apply_chat_template(
            text_only(messages), chat_template=template.text, add_generation_prompt=add_generation_prompt, tokenize=True,
            return_dict=True, return_assistant_tokens_mask=with_mask,
        )
        return Rendered(ids=list(rendered["input_ids"]), mask=list(rendered.get("assistant_masks") or []))
    images = images_in(messages)
    rendered = processing_class.apply_chat_template(
        [dict(m) for m in messages], chat_template=template.text, add_generation_prompt=add_generation_prompt, tokenize=True,
        return_dict=True, return_tensors="pt", return_assistant_tokens_mask=with_mask,
    )
    ids = rendered["input_ids"][0].tolist()
    mask = rendered["assistant_masks"][0].tolist() if with_mask else []
    features = {k: (v[0] if k in TOKEN_FIELDS else v) for k, v in rendered.items() if k not in SKIPPED_FIELDS}
    return Rendered(ids=ids, mask=[int(m) for m in mask], images=images, features=features)


def image_tokens(processing_class: Any, ids: Sequence[int]) -> int:
    """How many of ``ids`` stand for image content (0 for a text model)."""
    token = image_token_id(processing_class) if is_vision(processing_class) else None
    return sum(1 for i in ids if i == token) if token is not None else 0


def tokens_of_image(processing_class: Any, template: TrainingTemplate, width: int, height: int) -> int:
    """The tokens one image of this size becomes under the processor's bounds (0 for a text model)."""
    if not is_vision(processing_class):
        return 0
    with_image = [{"role": "user", "content": [{"type": "image", "image": Image.new("RGB", (width, height))}]}]
    return image_tokens(processing_class, render(processing_class, template, with_image).ids)
