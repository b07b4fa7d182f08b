"""Lets PyPI's torchvision import beside the CPU build of torch, in the vLLM server's environment only.

Why it is needed: PyPI has no CPU build of torchvision for x86_64 (those live on PyTorch's own index,
out of reach here). Its CUDA build's C++ extension needs ``libtorch_cuda.so``, which a CPU torch does
not have, so the extension does not load. torchvision is built to work without its extension (its
transforms are plain torch), except that it registers fake kernels for ``torchvision::nms`` and
``torchvision::qnms`` without checking that the extension defined them, and so its import fails
with ``operator torchvision::nms does not exist``. The Qwen3-VL processor needs torchvision (its
video processor resizes frames with ``torchvision.transforms.v2``), so vLLM cannot serve Qwen3-VL
without it.

What this does: when ``torchvision`` is first imported, and only if its extension cannot be loaded,
it defines those two operators with a CPU kernel written in torch (greedy non-maximum suppression),
so they are real operators, not placeholders (torchvision's Python wrappers, such as
``torchvision.ops.nms``, still say that its C++ ops are missing; ``torch.ops.torchvision.nms`` runs).
Where torchvision's extension does load (a real CPU build), nothing is defined. A ``.pth`` file imports this module at interpreter start; importing it
costs nothing (torch is imported only when torchvision is).
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
from pathlib import Path
from typing import Any

_LIBRARY: Any = None
"""The ``torchvision`` operator library defined here, kept alive for the process's lifetime."""


def nms(dets: Any, scores: Any, iou_threshold: float) -> Any:
    """Indices of the boxes kept by greedy non-maximum suppression, best score first (torchvision's contract)."""
    import torch

    order = torch.argsort(scores, descending=True)
    x1, y1, x2, y2 = dets[:, 0], dets[:, 1], dets[:, 2], dets[:, 3]
    areas = (x2 - x1).clamp(min=0) * (y2 - y1).clamp(min=0)
    suppressed = torch.zeros(dets.shape[0], dtype=torch.bool)
    keep = []
    for index in order.tolist():
        if suppressed[index]:
            continue
        keep.append(index)
        width = (torch.minimum(x2[index], x2) - torch.maximum(x1[index], x1)).clamp(min=0)
        height = (torch.minimum(y2[index], y2) - torch.maximum(y1[index], y1)).clamp(min=0)
        overlap = width * height
        iou = overlap / (areas[index] + areas - overlap)
        suppressed |= iou > iou_threshold
    return torch.tensor(keep, dtype=torch.int64)


def qnms(dets: Any, scores: Any, iou_threshold: float) -> Any:
    return nms(dets.dequantize(), scores.dequantize(), iou_threshold)


def _extension_loads(origin: str | None) -> bool:
    """Whether torchvision's own C++ extension loads here (then it defines the operators itself)."""
    import torch

    if origin is None:
        return False
    for candidate in sorted(Path(origin).parent.glob("_C*.so")):
        try:
            torch.ops.load_library(str(candidate))
            return True
        except (ImportError, OSError):
            return False
    return False


def define_operators(origin: str | None) -> None:
    global _LIBRARY
    import torch

    if _LIBRARY is not None or _extension_loads(origin):
        return
    library = torch.library.Library("torchvision", "DEF")
    library.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    library.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    library.impl("nms", nms, "CPU")
    library.impl("qnms", qnms, "QuantizedCPU")
    _LIBRARY = library


class _BeforeTorchvision(importlib.abc.MetaPathFinder):
    """Finds nothing itself: on the first import of torchvision it defines the operators, then steps aside."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> None:
        if name != "torchvision":
            return None
        sys.meta_path.remove(self)
        spec = importlib.util.find_spec("torchvision")
        define_operators(spec.origin if spec is not None else None)
        return None


def install() -> None:
    if not any(isinstance(finder, _BeforeTorchvision) for finder in sys.meta_path):
        sys.meta_path.insert(0, _BeforeTorchvision())


install()
