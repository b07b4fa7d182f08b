"""A LoRA adapter saved by SFT, turned into the model GRPO starts from: its base with the adapter merged in.

``m3d train sft --lora`` saves only an adapter (``adapter_config.json`` and its weights) beside the
processor's files. GRPO must start from the SFT policy and hold it as its frozen KL reference (the
paper's π_ref, §3.5): loaded as it is, with a fresh adapter for GRPO on top, the reference would be
the model with every adapter off, the base model before SFT. So a folder holding an adapter is
merged into its base once, into ``merged/`` inside it, and training reads that folder: with
``--lora`` the new adapter then sits on the SFT weights and turning it off gives the SFT policy;
without LoRA the reference TRL reloads from the folder is the SFT policy too.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

from m3d_agents.errors import InputError

log = logging.getLogger(__name__)

ADAPTER_CONFIG = "adapter_config.json"
MERGED = "merged"
ADAPTER_FILES = ("adapter_config.json", "adapter_model.safetensors", "adapter_model.bin", "training_args.bin", "README.md")


def is_adapter(folder: Path) -> bool:
    return (folder / ADAPTER_CONFIG).is_file() and not (folder / "config.json").is_file()


def adapter_base(folder: Path) -> str:
    """The base model an adapter was trained on, as its configuration names it."""
    try:
        base = json.loads((folder / ADAPTER_CONFIG).read_text(encoding="utf-8")).get("base_model_name_or_path")
    except (OSError, ValueError) as exc:
        raise InputError("model", f"{folder / ADAPTER_CONFIG} cannot be read ({type(exc).__name__})") from None
    if not base:
        raise InputError("model", f"{folder / ADAPTER_CONFIG} does not name its base model (base_model_name_or_path)")
    return str(base)


def _stamp(folder: Path) -> str:
    weights = [p for p in (folder / "adapter_model.safetensors", folder / "adapter_model.bin") if p.is_file()]
    if not weights:
        raise InputError("model", f"{folder} has an adapter configuration but no adapter weights")
    return f"{weights[0].name}:{weights[0].stat().st_size}:{weights[0].stat().st_mtime_ns}"


def merged_model(folder: Path) -> Path:
    """``folder`` itself when it holds a whole model; for an adapter, its base with the adapter merged in (made once,
    in ``folder/merged``, and made again when the adapter's weights change)."""
    if not is_adapter(folder):
        return folder
    target = folder / MERGED
    stamp = _stamp(folder)
    marker = target / "merged-from.txt"
    if marker.is_file() and marker.read_text(encoding="utf-8") == stamp and (target / "config.json").is_file():
        return target
    base = adapter_base(folder)
    if not Path(base).is_dir():
        raise InputError("model", f"the adapter in {folder} was trained on {base}, which is not a model folder here")
    import transformers
    from peft import PeftModel

    config = transformers.AutoConfig.from_pretrained(base)
    architecture = next((getattr(transformers, name) for name in config.architectures or [] if hasattr(transformers, name)),
                        transformers.AutoModelForCausalLM)
    log.warning("merging the LoRA adapter in %s into its base %s, into %s: training starts from it and holds it as "
                "the KL reference", folder, base, target)
    model = architecture.from_pretrained(base, dtype="auto")
    merged = PeftModel.from_pretrained(model, str(folder)).merge_and_unload()
    if target.exists():
        shutil.rmtree(target)
    merged.save_pretrained(target, safe_serialization=True)
    for path in folder.iterdir():  # the processor's and tokenizer's files that SFT saved beside the adapter
        if path.is_file() and path.name not in ADAPTER_FILES:
            shutil.copy2(path, target / path.name)
    marker.write_text(stamp, encoding="utf-8")
    return target
