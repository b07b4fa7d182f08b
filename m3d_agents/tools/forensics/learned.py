"""An optional slot for a learned forgery detector: a TorchScript model from a local file.

No weights ship with the product and nothing is downloaded; a user who has a trained detector
points ``M3D_FORGERY_MODEL`` (or the ``path`` argument) at its TorchScript file. TorchScript is
used rather than pickled modules because loading it cannot run arbitrary code.

The model receives a float tensor of shape (1, 3, H, W) with values in [0, 1] and returns logits:
either one value for the image, or a (1, 1, h, w) map whose maximum is the image's logit.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
from PIL import Image

from m3d_agents.errors import InputError
from m3d_agents.media.images import PreparedImage
from m3d_agents.tools.forensics.base import ForensicResult, analysis_image, heatmap_png

NAME = "learned_detector"
MODEL_ENV = "M3D_FORGERY_MODEL"


def configured_path(path: Path | str | None = None) -> Path | None:
    chosen = path or os.environ.get(MODEL_ENV)
    return Path(chosen) if chosen else None


@lru_cache(maxsize=4)
def _load(path: str, mtime: float) -> Any:
    try:
        import torch
    except ImportError as exc:
        raise InputError(MODEL_ENV, "the learned detector needs torch, which is not installed") from exc
    try:
        model = torch.jit.load(path, map_location="cpu")
    except (RuntimeError, ValueError) as exc:
        raise InputError(MODEL_ENV, f"{path} is not a TorchScript model: {str(exc).splitlines()[0]}") from exc
    model.eval()
    return model


def unavailable(reason: str) -> ForensicResult:
    return ForensicResult(tool=NAME, score=0.5, informative=False, finding=f"unavailable: {reason}")


def analyse_learned(image: PreparedImage, path: Path | str | None = None) -> ForensicResult:
    model_path = configured_path(path)
    if model_path is None:
        return unavailable(f"no learned detector configured (set {MODEL_ENV} to a TorchScript file)")
    if not model_path.is_file():
        raise InputError(MODEL_ENV, f"file {model_path} does not exist")
    model = _load(str(model_path), model_path.stat().st_mtime)
    import torch

    pixels = analysis_image(image)
    tensor = torch.from_numpy(pixels.rgb.astype(np.float32) / 255.0).permute(2, 0, 1).unsqueeze(0)
    with torch.inference_mode():
        output = model(tensor)
    if not isinstance(output, torch.Tensor) or output.numel() == 0:
        raise InputError(MODEL_ENV, f"{model_path} returned {type(output).__name__}, expected a tensor of logits")
    probabilities = torch.sigmoid(output.float()).squeeze().cpu().numpy()
    height, width = pixels.rgb.shape[:2]
    if probabilities.ndim == 2:
        picture = Image.fromarray(probabilities.astype(np.float32), mode="F").resize((width, height), Image.Resampling.BILINEAR)
        heatmap = np.clip(np.asarray(picture, dtype=np.float64), 0.0, 1.0)
        score = float(probabilities.max())
    elif probabilities.size == 1:
        score = float(probabilities.reshape(()))
        heatmap = np.full((height, width), score)
    else:
        raise InputError(MODEL_ENV, f"{model_path} returned shape {tuple(output.shape)}; expected one logit or a (1, 1, h, w) map")
    finding = f"learned detector {model_path.name}: forgery probability {score:.2f}"
    return ForensicResult(tool=NAME, score=round(score, 4), finding=finding, heatmap=heatmap,
                          heatmap_png=heatmap_png(heatmap), details={"model": str(model_path)})
