"""A tiny random Whisper with a tokenizer made here: the speech-recognition step end to end, without a download."""

from __future__ import annotations

import json
from pathlib import Path

SPECIAL = ["<|startoftranscript|>", "<|en|>", "<|transcribe|>", "<|translate|>", "<|notimestamps|>", "<|nocaptions|>",
           "<|startofprev|>", "<|startoflm|>"]


def tiny_whisper(folder: Path) -> Path:
    """Save a one-layer, 16-wide Whisper and its processor (16 mel bins) to ``folder``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import WhisperConfig, WhisperFeatureExtractor, WhisperForConditionalGeneration, WhisperProcessor, WhisperTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.train_from_iterator(["the water rose over the road in town today"],
                                trainers.BpeTrainer(vocab_size=300, show_progress=False, initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    vocab = json.loads(backend.to_str())["model"]["vocab"]
    vocab.setdefault("<|endoftext|>", len(vocab))
    merges = [tuple(m.split()) if isinstance(m, str) else tuple(m) for m in json.loads(backend.to_str())["model"]["merges"]]
    tokenizer = WhisperTokenizer(vocab=vocab, merges=merges, additional_special_tokens=SPECIAL)
    ids = {token: tokenizer.convert_tokens_to_ids(token) for token in ["<|endoftext|>", *SPECIAL]}
    config = WhisperConfig(
        vocab_size=len(tokenizer), num_mel_bins=16, d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_source_positions=1500, max_target_positions=64,
        pad_token_id=ids["<|endoftext|>"], bos_token_id=ids["<|endoftext|>"], eos_token_id=ids["<|endoftext|>"],
        decoder_start_token_id=ids["<|startoftranscript|>"],
    )
    model = WhisperForConditionalGeneration(config)
    model.generation_config.decoder_start_token_id = ids["<|startoftranscript|>"]
    model.generation_config.no_timestamps_token_id = ids["<|notimestamps|>"]
    model.generation_config.max_length = 16
    model.save_pretrained(folder)
    WhisperProcessor(feature_extractor=WhisperFeatureExtractor(feature_size=16), tokenizer=tokenizer).save_pretrained(folder)
    return folder
