"""An optional slot for a learned forgery detector: TorchScript, or a Hugging Face checkpoint, from local files.

No weights ship with the product and nothing is downloaded; a user who has a trained detector
points the tool at it (``tools: {learned_detector: {model: PATH}}`` in a configuration or the
config file, else ``M3D_FORGERY_MODEL``). Two formats load, both without running code from the
checkpoint:

- a **TorchScript file**: it receives a float tensor of shape (1, 3, H, W) with values in [0, 1]
  and returns logits: one value for the image, or a (1, 1, h, w) map whose maximum is the image's
  logit. A detector with its own preprocessing (PatchCraft's texture patches, TruFor's
  Noiseprint++) is traced with that preprocessing inside;
- a **folder with a Hugging Face checkpoint** (``config.json``, weights in ``*.safetensors``, and
  ``preprocessor_config.json`` when the model has an image processor): an image-classification or
  semantic-segmentation model, loaded through ``transformers``' auto classes with
  ``trust_remote_code=False`` and ``use_safetensors=True``, from local files only. The label that
  means manipulated is ``positive_label``, else the one label named like fake, forged,
  manipulated, tampered, generated or synthetic. A classifier's probability of that label is the
  score; a segmentation model's per-pixel probability is the heat map and its maximum the score.

See ``docs/guides/learned-detectors.md`` for plugging in PatchCraft-, TruFor- or DIRE-style weights.
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from m3d_agents.errors import InputError
from m3d_agents.isolation import Item, parse
from m3d_agents.media.images import ImageRef, PreparedImage
from m3d_agents.tools.forensics.base import ForensicResult, analysis_image, heatmap_png, heatmap_shape

NAME = "learned_detector"
MODEL_ENV = "M3D_FORGERY_MODEL"
FIELD = "tools.learned_detector.model"
POSITIVE = re.compile(r"fake|forg|manipul|tamper|generat|synthe|spoof|edited|altered", re.IGNORECASE)


def configured_path(path: Path | str | None = None) -> Path | None:
    chosen = path or os.environ.get(MODEL_ENV)
    return Path(chosen).expanduser() if chosen else None


def _torch() -> Any:
    try:
        import torch
    except ImportError as exc:
        raise InputError(FIELD, "the learned detector needs torch, which is not installed") from exc
    return torch


def _device() -> str:
    """Where a detector runs: the GPU when torch sees one (a detector is a forward pass per image), else the CPU."""
    return "cuda" if _torch().cuda.is_available() else "cpu"


@lru_cache(maxsize=4)
def _load_torchscript(path: str, mtime: float) -> Any:
    torch = _torch()
    try:
        model = torch.jit.load(path, map_location=_device())
    except (RuntimeError, ValueError) as exc:
        raise InputError(FIELD, f"{path} is not a TorchScript model: {str(exc).splitlines()[0]}") from exc
    model.eval()
    return model


class HubDetector:
    """A Hugging Face image-classification or segmentation checkpoint, read from a local folder."""

    def __init__(self, folder: Path, positive_label: str | None) -> None:
        from transformers import AutoConfig, AutoModelForImageClassification, AutoModelForSemanticSegmentation
        from transformers.models.auto.modeling_auto import (MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES,
                                                            MODEL_FOR_SEMANTIC_SEGMENTATION_MAPPING_NAMES)

        if not any(folder.glob("*.safetensors")):
            raise InputError(FIELD, f"{folder} holds no *.safetensors weights; only safetensors are loaded "
                                    "(convert pickled weights with safetensors' save_file)")
        options = {"local_files_only": True, "trust_remote_code": False}
        try:
            config = AutoConfig.from_pretrained(folder, **options)
        except (OSError, ValueError) as exc:
            raise InputError(FIELD, f"{folder} is not a Hugging Face checkpoint: {str(exc).splitlines()[0]}") from None
        architectures = " ".join(config.architectures or [])
        auto: Any
        if config.model_type in MODEL_FOR_SEMANTIC_SEGMENTATION_MAPPING_NAMES and "Segmentation" in architectures:
            auto, self.kind = AutoModelForSemanticSegmentation, "segmentation"
        elif config.model_type in MODEL_FOR_IMAGE_CLASSIFICATION_MAPPING_NAMES:
            auto, self.kind = AutoModelForImageClassification, "classification"
        else:
            raise InputError(FIELD, f"{folder}: model type {config.model_type!r} ({architectures or 'no architecture'}) is "
                                    "neither an image-classification nor a semantic-segmentation model of transformers")
        try:
            self.model = auto.from_pretrained(folder, use_safetensors=True, **options)
        except (OSError, ValueError) as exc:
            raise InputError(FIELD, f"cannot load {folder}: {str(exc).splitlines()[0]}") from None
        self.device = _device()
        self.model.to(self.device).eval()
        self.processor = _image_processor(folder, options) if (folder / "preprocessor_config.json").is_file() else None
        self.size = int(getattr(config, "image_size", 224) or 224)
        self.index = self._positive_index(config, positive_label, folder)
        self.name = folder.name

    def _positive_index(self, config: Any, positive_label: str | None, folder: Path) -> int:
        labels = {int(i): str(name) for i, name in (config.id2label or {}).items()}
        if self.kind == "classification" and len(labels) == 1 or self.kind == "segmentation" and config.num_labels == 1:
            return 0
        if positive_label is not None:
            found = [i for i, name in labels.items() if name.casefold() == positive_label.casefold()]
            if not found:
                raise InputError("tools.learned_detector.positive_label",
                                 f"{positive_label!r} is not a label of {folder.name}; its labels: {', '.join(labels.values())}")
            return found[0]
        named = [i for i, name in labels.items() if POSITIVE.search(name)]
        if len(named) != 1:
            raise InputError("tools.learned_detector.positive_label",
                             f"say which label of {folder.name} means manipulated; its labels: {', '.join(labels.values())}")
        return named[0]

    def pixels(self, rgb: np.ndarray) -> Any:
        torch = _torch()
        picture = Image.fromarray(rgb)
        if self.processor is not None:
            return self.processor(images=picture, return_tensors="pt")["pixel_values"]
        resized = np.asarray(picture.resize((self.size, self.size), Image.Resampling.BILINEAR), dtype=np.float32) / 255.0
        return torch.from_numpy(resized).permute(2, 0, 1).unsqueeze(0)

    def probabilities(self, rgb: np.ndarray) -> np.ndarray:
        """The positive label's probability: one value (classification) or a (h, w) map (segmentation)."""
        torch = _torch()
        with torch.inference_mode():
            logits = self.model(pixel_values=self.pixels(rgb).to(self.device)).logits.float()
        if logits.shape[1] == 1:
            chosen = torch.sigmoid(logits[:, 0])
        else:
            chosen = torch.softmax(logits, dim=1)[:, self.index]
        return chosen.squeeze(0).cpu().numpy()


def _image_processor(folder: Path, options: dict[str, Any]) -> Any:
    """The checkpoint's image processor; where transformers' auto class needs torchvision and it is not installed
    (some 5.x releases), the class the checkpoint names, which does not."""
    import transformers

    try:
        return transformers.AutoImageProcessor.from_pretrained(folder, **options)
    except ImportError as exc:
        try:
            named = str(json.loads((folder / "preprocessor_config.json").read_text(encoding="utf-8")).get("image_processor_type") or "")
        except (OSError, ValueError):
            named = ""
        found = getattr(transformers, named, None) or getattr(transformers, named.removesuffix("Fast"), None)
        if found is None:
            raise InputError(FIELD, f"{folder}: its image processor cannot load ({' '.join(str(exc).split())[:200]})") from None
        return found.from_pretrained(folder, **options)


@lru_cache(maxsize=4)
def _load_hub(folder: str, positive_label: str | None, stamp: tuple[tuple[str, float], ...]) -> HubDetector:
    return HubDetector(Path(folder), positive_label)


def _stamp(folder: Path) -> tuple[tuple[str, float], ...]:
    """The folder's files and their modification times, so an edited checkpoint is loaded afresh."""
    return tuple(sorted((p.name, p.stat().st_mtime) for p in folder.iterdir() if p.is_file()))


def unavailable(reason: str) -> ForensicResult:
    return ForensicResult(tool=NAME, score=0.5, informative=False, finding=f"unavailable: {reason}")


def analysis_pixels(image: PreparedImage) -> np.ndarray:
    """The image at forensic analysis size, decoded in a parser worker (the model itself runs here, where it is loaded)."""
    return parse(Item("image", str(image.source), "the image decoder"), _pixels_here, image.ref())


def _pixels_here(image: ImageRef) -> np.ndarray:
    return analysis_image(image).rgb


def analyse_learned(image: PreparedImage, path: Path | str | None = None, positive_label: str | None = None) -> ForensicResult:
    model_path = configured_path(path)
    if model_path is None:
        return unavailable("no learned detector configured (set tools: {learned_detector: {model: PATH}} "
                           f"or {MODEL_ENV} to a TorchScript file or a Hugging Face checkpoint folder)")
    if not model_path.exists():
        raise InputError(FIELD, f"{model_path} does not exist")
    rgb = analysis_pixels(image)
    height, width = heatmap_shape(rgb.shape[:2])
    if model_path.is_dir():
        detector = _load_hub(str(model_path.resolve()), positive_label, _stamp(model_path))
        probabilities = detector.probabilities(rgb)
        label = f"{detector.kind} checkpoint {detector.name}"
    elif model_path.is_file():
        model = _load_torchscript(str(model_path), model_path.stat().st_mtime)
        probabilities = _torchscript_probabilities(model, rgb, model_path)
        label = f"learned detector {model_path.name}"
    else:
        raise InputError(FIELD, f"{model_path} does not exist")
    if probabilities.ndim == 2:
        picture = Image.fromarray(probabilities.astype(np.float32), mode="F").resize((width, height), Image.Resampling.BILINEAR)
        heatmap = np.clip(np.asarray(picture, dtype=np.float32), 0.0, 1.0)
        score = float(probabilities.max())
    elif probabilities.size == 1:
        score = float(probabilities.reshape(()))
        heatmap = np.full((height, width), score, dtype=np.float32)
    else:
        raise InputError(FIELD, f"{model_path} returned shape {probabilities.shape}; expected one logit or a (1, 1, h, w) map")
    return ForensicResult(tool=NAME, score=round(score, 4), finding=f"{label}: forgery probability {score:.2f}",
                          heatmap=heatmap, heatmap_png=heatmap_png(heatmap), details={"model": str(model_path)})


def _torchscript_probabilities(model: Any, rgb: np.ndarray, model_path: Path) -> np.ndarray:
    torch = _torch()
    tensor = torch.from_numpy(rgb.astype(np.float32) / 255.0).permute(2, 0, 1).unsqueeze(0).to(_device())
    with torch.inference_mode():
        output = model(tensor)
    if not isinstance(output, torch.Tensor) or output.numel() == 0:
        raise InputError(FIELD, f"{model_path} returned {type(output).__name__}, expected a tensor of logits")
    return torch.sigmoid(output.float()).squeeze().cpu().numpy()


def describe_checkpoint(path: Path | str) -> str:
    """What a checkpoint path holds, read without loading weights (for ``m3d reproduce --plan``)."""
    model_path = Path(path).expanduser()
    if model_path.is_file():
        return f"TorchScript file {model_path}"
    config = model_path / "config.json"
    if model_path.is_dir() and config.is_file():
        try:
            architectures = json.loads(config.read_text(encoding="utf-8")).get("architectures") or ["?"]
        except (OSError, ValueError):
            architectures = ["unreadable config.json"]
        return f"Hugging Face checkpoint {model_path} ({', '.join(architectures)})"
    return f"{model_path} (missing)"
