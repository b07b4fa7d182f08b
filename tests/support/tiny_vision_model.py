"""A tiny random Qwen2.5-VL (the paper's architecture) with a processor made here: vision-language training tests on CPU.

The tokenizer is byte-level BPE trained here on the FactGuard prompts (about a thousand tokens), so
any text (a tool call's JSON included) decodes back exactly and prompts stay short, plus Qwen's
special tokens; its chat template is Qwen2.5-VL's own, which has no
``{% generation %}`` marks (the case the training template exists for). The image processor keeps
images small (at most 56x56 pixels: 4 vision tokens each). Qwen's processor also wants a video
processor, which needs torchvision; :class:`ImageOnlyProcessor` is the same processor without one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support.paths import REPO

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>"]


def image_only_processor_class() -> Any:
    from transformers import ProcessorMixin, Qwen2_5_VLProcessor

    class ImageOnlyProcessor(Qwen2_5_VLProcessor):  # type: ignore[misc]
        """Qwen2.5-VL's processor for images only (its video processor needs torchvision)."""

        def __init__(self, image_processor: Any = None, tokenizer: Any = None, chat_template: str | None = None, **kwargs: Any) -> None:
            self.image_token = "<|image_pad|>"
            self.video_token = "<|video_pad|>"
            self.image_token_id = tokenizer.convert_tokens_to_ids(self.image_token)
            self.video_token_id = tokenizer.convert_tokens_to_ids(self.video_token)
            self.vision_start_token_id = tokenizer.convert_tokens_to_ids("<|vision_start|>")
            self.vision_end_token_id = tokenizer.convert_tokens_to_ids("<|vision_end|>")
            ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)

    return ImageOnlyProcessor


def byte_tokenizer(vocab_size: int = 1024) -> Any:
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    texts = [path.read_text() for path in sorted((REPO / "prompts" / "factguard").glob("*.md"))]
    backend.train_from_iterator(texts, trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL, show_progress=False,
                                                           initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    return PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   additional_special_tokens=SPECIAL[1:])


TINY_TEXT = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                 max_position_embeddings=32768, rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]})
TINY_VISION = dict(depth=2, hidden_size=32, intermediate_size=64, num_heads=2, out_hidden_size=32, fullatt_block_indexes=[1], window_size=56)
TINY_IMAGES = (28 * 28, 56 * 56)
"""At most 56x56 pixels an image: 4 vision tokens each."""
QWEN_IMAGES = (3136, 12845056)
"""Qwen2.5-VL-7B-Instruct's own bounds (its preprocessor_config.json): a 1280x720 frame stays full size."""


def image_processor(min_pixels: int, max_pixels: int) -> Any:
    import transformers

    # transformers 5 names the PIL processor ...Pil; earlier releases call the same one Qwen2VLImageProcessor.
    found = getattr(transformers, "Qwen2VLImageProcessorPil", None) or transformers.Qwen2VLImageProcessor
    return found(min_pixels=min_pixels, max_pixels=max_pixels)


def qwen25_vl(folder: Path, text: dict[str, Any], vision: dict[str, Any], images: tuple[int, int] = TINY_IMAGES,
              chat_template: str | None = None, device: str = "cpu", dtype: Any = None) -> tuple[Path, Any]:
    """Save a Qwen2.5-VL of these sizes with random weights (made on ``device`` in ``dtype``) and the byte-level tokenizer
    to ``folder``; return the folder and its processor (``images``: the image processor's pixel bounds)."""
    import torch
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration
    from trl.chat_template_utils import qwen2_5_vl_chat_template

    tokenizer = byte_tokenizer()
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in SPECIAL}
    processor = image_only_processor_class()(
        image_processor=image_processor(*images), tokenizer=tokenizer, chat_template=chat_template or qwen2_5_vl_chat_template,
    )
    config = Qwen2_5_VLConfig(
        text_config=dict(text, vocab_size=max(int(text.get("vocab_size", 0)), len(tokenizer)), bos_token_id=ids["<|endoftext|>"],
                         eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"]),
        vision_config=dict(vision),
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"], vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"], eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"],
        tie_word_embeddings=bool(text.get("tie_word_embeddings", False)),
    )
    with torch.device(device):
        model = Qwen2_5_VLForConditionalGeneration._from_config(config, dtype=dtype or torch.float32)
    model.generation_config.eos_token_id = ids["<|im_end|>"]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, processor


def tiny_vision_model(folder: Path, chat_template: str | None = None) -> tuple[Path, Any]:
    """Save a 2-layer, 32-wide Qwen2.5-VL to ``folder`` and return the folder and its processor.

    ``chat_template`` replaces Qwen2.5-VL's own (which has no generation marks).
    """
    return qwen25_vl(folder, TINY_TEXT, TINY_VISION, TINY_IMAGES, chat_template)
