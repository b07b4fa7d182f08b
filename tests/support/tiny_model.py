"""A tiny random Llama with a word-level tokenizer and the project's chat template: training tests in seconds."""

from __future__ import annotations

import re
from pathlib import Path

from tests.support.paths import REPO

SPECIAL = ["<pad>", "<unk>", "<bos>", "<eos>", "<start_of_turn>", "<end_of_turn>"]


def tiny_model(folder: Path) -> Path:
    """Save a 2-layer, 32-wide Llama and its tokenizer to ``folder`` (the reference model reloads from a path)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    from debates.strategies.factguard.training.chat_template import CHAT_TEMPLATE

    words: set[str] = set()
    for path in sorted((REPO / "prompts" / "factguard").glob("*.md")):
        words.update(re.findall(r"\w+|[^\w\s]", path.read_text()))
    words.update(["fake", "real", "think", "answer", "tool_call", "model", "user", "image", "[", "]"])
    vocab = {token: i for i, token in enumerate(SPECIAL + sorted(words))}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="<pad>", unk_token="<unk>", bos_token="<bos>",
                                        eos_token="<end_of_turn>", additional_special_tokens=["<start_of_turn>", "<eos>"])
    tokenizer.chat_template = CHAT_TEMPLATE
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                         num_key_value_heads=2, max_position_embeddings=4096, pad_token_id=0, bos_token_id=2,
                         eos_token_id=vocab["<end_of_turn>"])
    model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = vocab["<end_of_turn>"]
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
