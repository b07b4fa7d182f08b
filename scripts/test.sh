#!/usr/bin/env bash
# Lint, types, the tests on two workers, and the documentation site, as CI runs them.
#   bash scripts/test.sh        everything (what CI runs)
#   bash scripts/test.sh fast   the fast tier for development: no embedded model, Ray, training,
#                               browser, notebook or vLLM tests, and no site build
# Further arguments go to pytest (bash scripts/test.sh fast tests/debates/debate_engine -x).
set -euo pipefail
cd "$(dirname "$0")/.."
tier=full
if [ "${1:-}" = fast ]; then tier=fast; shift; fi
.venv/bin/ruff check .
.venv/bin/mypy
# The benchmarks are scripts, not a package; checked on their own so an API change cannot leave one broken.
.venv/bin/mypy --explicit-package-bases --follow-imports=silent benchmarks/*.py
if [ "$tier" = fast ]; then
    .venv/bin/python -m pytest -q -n 2 --dist loadgroup \
        -m "not integration and not ray and not train and not browser and not notebook and not vllm" "$@"
else
    .venv/bin/python -m pytest -q -n 2 --dist loadgroup --durations=25 "$@"
    NO_MKDOCS_2_WARNING=1 .venv/bin/mkdocs build --strict -q -d .cache/site
    # The framework's CPU per model call, in a short CPU section of the throughput benchmark (well under a
    # minute): printed, never judged, so that a change that adds CPU to every call shows in the log.
    .venv/bin/python benchmarks/throughput.py --only cpu --one-process --samples 64 --concurrency 32 --repeat 2 \
        | grep -E "^framework (CPU per model call|/ bare client CPU per call):"
fi
