#!/usr/bin/env bash
# The wheels benchmarks/gpu_check.py needs on a GPU machine that has PyTorch, transformers, peft,
# accelerate and the common scientific stack (numpy, pillow, pandas, pyarrow, requests, jinja2, ...)
# but no network: TRL and datasets (with dill and multiprocess), pydantic, AutoGen's core and
# agentchat (with jsonref and opentelemetry-api), tldextract (with requests-file) and PyAV, which
# reads the clip; and peft at the version the CPU rehearsal ran (the machine's own may be older). They are downloaded for CPython 3.12 on x86-64 Linux into .whl/ at the repository
# root (one version of each; older files there are removed first), and their total size is printed
# with the working tree's, since both travel together.
#
#   bash scripts/gpu-check-wheels.sh [PYTHON_VERSION]     default 3.12
#
# On the GPU machine, from the repository root:
#   python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl
#   PYTHONPATH=/tmp/site:$PWD python3 benchmarks/gpu_check.py
set -euo pipefail
cd "$(dirname "$0")/.."
python_version="${1:-3.12}"
wheels=(
    trl==1.16.0 datasets==5.2.0 dill==0.4.1 multiprocess==0.70.19 peft==0.21.2
    pydantic==2.14.4 pydantic-core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5 typing-extensions==4.16.0
    autogen-core==0.7.5 autogen-agentchat==0.7.5 jsonref==1.1.0 opentelemetry-api==1.45.2
    tldextract==5.4.0 requests-file==3.0.1
    av==18.1.0
)
mkdir -p .whl
rm -f .whl/*.whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version "$python_version" --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl "${wheels[@]}"
count=$(find .whl -type f -name '*.whl' | wc -l)
if [ "$count" -ne "${#wheels[@]}" ]; then
    echo "error: ${#wheels[@]} wheels asked for, $count in .whl" >&2
    exit 1
fi
wheel_bytes=$(find .whl -type f -name '*.whl' -printf '%s\n' | awk '{s += $1} END {print s}')
tree_bytes=$(git ls-files -z --cached --others --exclude-standard | xargs -0 stat -c '%s' 2>/dev/null | awk '{s += $1} END {print s}')
awk -v w="$wheel_bytes" -v t="$tree_bytes" -v n="$count" 'BEGIN {
    printf "wheels: %d files, %.1f MiB in .whl\n", n, w / 1048576
    printf "working tree: %.1f MiB; together: %.1f MiB (the limit: 64 MiB)\n", t / 1048576, (w + t) / 1048576
}'
