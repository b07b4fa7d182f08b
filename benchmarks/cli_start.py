"""How long ``m3d`` takes to answer a command that only prints, best of 5 runs each.

    python benchmarks/cli_start.py [--runs 5]

Prints ``m3d config wall s: X`` and ``m3d --help wall s: Y`` (the goal: under 1 s each on a quiet
two-core machine), the same for ``m3d seats judged`` and ``m3d reproduce --list``, and the load
average each ran at. Each run is a fresh process, as a user's command is: the ``m3d`` script beside
this Python (``python -m debates`` where there is none). The figures are measured, never asserted:
the machine may be shared, so the best of several runs is printed with its load. Which modules a
printing command may not import is a test (tests/debates/cli/test_start_imports.py).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COMMANDS: list[tuple[str, list[str]]] = [
    ("m3d config", ["config"]),
    ("m3d --help", ["--help"]),
    ("m3d seats judged", ["seats", "judged"]),
    ("m3d reproduce --list", ["reproduce", "--list"]),
]


def m3d() -> list[str]:
    script = Path(sys.executable).with_name("m3d")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "debates"]


def best_wall(args: list[str], runs: int) -> float:
    walls = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run([*m3d(), *args], cwd=REPO, capture_output=True, text=True, check=False)
        walls.append(time.perf_counter() - started)
        if done.returncode != 0:
            raise SystemExit(f"m3d {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()[-400:]}")
    return min(walls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs per command; the best is printed")
    options = parser.parse_args()
    for name, args in COMMANDS:
        wall = best_wall(args, options.runs)
        load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
        print(f"{name} wall s: {wall:.2f}  (best of {options.runs}; load average {load})")


if __name__ == "__main__":
    main()
