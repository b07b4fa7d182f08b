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

import contextlib
import hashlib
import io
import weakref
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Iterator, Mapping, Sequence

from autogen_core import Image as AgentImage
from autogen_core.models import AssistantMessage, LLMMessage, SystemMessage, UserMessage
from PIL import Image

from debates.strategies.factguard.training.chat_template import ChatTemplateError, TrainingTemplate
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


KEPT_IMAGES = 32
"""Processed images kept (a 1280x720 frame is about 22 MB of pixel values on Qwen2.5-VL): a step's frames and grids."""


class KeptImages:
    """The image processor with each image's output kept, keyed by its pixels and the processing arguments.

    A rollout renders its conversation at every turn and once more for the trainer, each time with the
    same eight full-size frames, and the eight rollouts of a group share them: processing each image
    once keeps the CPU from holding up the GPU between batched turns. Each image is processed alone,
    which is what the processor does to each image of a list, so the outputs are the same.
    """

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.kept: OrderedDict[tuple[str, str], Any] = OrderedDict()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __call__(self, images: Any = None, *args: Any, **kwargs: Any) -> Any:
        listed = images if isinstance(images, (list, tuple)) else [images]
        if listed and all(isinstance(inner, (list, tuple)) for inner in listed):  # a list of images per conversation
            listed = [image for inner in listed for image in inner]
        if args or not listed or not all(isinstance(image, Image.Image) for image in listed):
            return self.inner(images, *args, **kwargs)
        settings = repr(sorted(kwargs.items()))
        parts = []
        for image in listed:
            key = (hashlib.sha1(image.mode.encode() + repr(image.size).encode() + image.tobytes()).hexdigest(), settings)
            if key not in self.kept:
                self.kept[key] = self.inner([image], **kwargs)
                while len(self.kept) > KEPT_IMAGES:
                    self.kept.popitem(last=False)
            self.kept.move_to_end(key)
            parts.append(self.kept[key])
        return join_features(parts)


def join_features(parts: Sequence[Any]) -> Any:
    """The outputs of one image at a time as the output of all of them: every field concatenated along its first axis."""
    import numpy as np
    import torch
    from transformers import BatchFeature

    joined = {}
    for name in parts[0].keys():
        values = [part[name] for part in parts]
        joined[name] = torch.cat(values) if isinstance(values[0], torch.Tensor) else np.concatenate(values)
    return BatchFeature(data=joined)


@contextlib.contextmanager
def kept_images(processing_class: Any) -> Iterator[None]:
    """Render with the processor's image processor keeping what it made (the processor itself is left as it was)."""
    inner = getattr(processing_class, "image_processor", None)
    if inner is None or isinstance(inner, KeptImages):
        yield
        return
    kept = _kept.get(inner)
    if kept is None:
        kept = _kept[inner] = KeptImages(inner)
    processing_class.image_processor = kept
    try:
        yield
    finally:
        processing_class.image_processor = inner


_kept: weakref.WeakKeyDictionary[Any, KeptImages] = weakref.WeakKeyDictionary()


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
    with kept_images(processing_class):
        rendered = processing_class.apply_chat_template(
            [dict(m) for m in messages], chat_template=template.text, add_generation_prompt=add_generation_prompt, tokenize=True,
            return_dict=True, return_tensors="pt",
        )
    ids = rendered["input_ids"][0].tolist()
    mask = assistant_mask(processing_class, template, messages, ids, add_generation_prompt) if with_mask else []
    features = {k: (v[0] if k in TOKEN_FIELDS else v) for k, v in rendered.items() if k not in SKIPPED_FIELDS}
    return Rendered(ids=ids, mask=mask, images=images, features=features)


def assistant_mask(processing_class: Any, template: TrainingTemplate, messages: Sequence[Mapping[str, Any]], ids: Sequence[int],
                   add_generation_prompt: bool = False) -> list[int]:
    """The mask of the model's own tokens in ``ids``, a conversation the processor rendered with its images expanded
    (or the start of one, when it was cut at a maximum length).

    The tokenizer marks the assistant's tokens of the same conversation before the processor expands each image
    placeholder into the image's tokens; the mask is then widened over each expansion (an image is never the model's
    own). Processors before transformers 5.18 placed the mask by character offsets that the expansion had shifted,
    so it fell on the wrong tokens or on none; this reads the same on every version.
    """
    tokenizer = tokenizer_of(processing_class)
    plain = tokenizer.apply_chat_template(
        [dict(m) for m in messages], chat_template=template.text, add_generation_prompt=add_generation_prompt, tokenize=True,
        return_dict=True, return_assistant_tokens_mask=True,
    )
    plain_ids, plain_mask = list(plain["input_ids"]), [int(m) for m in plain["assistant_masks"]]
    image = image_token_id(processing_class)
    mask: list[int] = []
    at = 0
    for index, token in enumerate(plain_ids):
        if at == len(ids):  # the processor's tokens were cut at a maximum length
            break
        if token == image:
            if index and plain_ids[index - 1] == image:
                continue  # adjacent placeholders: their expansions run together
            while at < len(ids) and ids[at] == image:
                mask.append(0)
                at += 1
            continue
        if at >= len(ids) or ids[at] != token:
            raise ChatTemplateError(template.model, template.source, "the processor's tokens of a conversation differ from the "
                                    "tokenizer's outside the images, so the assistant mask cannot be placed")
        mask.append(plain_mask[index])
        at += 1
    if at != len(ids):
        raise ChatTemplateError(template.model, template.source, "the processor rendered more tokens than the tokenizer outside "
                                "the images, so the assistant mask cannot be placed")
    return mask


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
