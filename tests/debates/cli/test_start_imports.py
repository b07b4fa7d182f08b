"""A command that only prints imports none of what running a model takes, so it answers at once.

Measured by benchmarks/cli_start.py (``m3d config wall s: X``); kept here by the modules such a
command imports: each runs in a fresh interpreter, which then lists what it loaded.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.support.paths import REPO

HEAVY = ("torch", "transformers", "autogen_core", "autogen_agentchat", "autogen_ext", "ray", "av", "lxml")
"""Model runtimes, AutoGen, Ray, PyAV and the HTML parser: seconds of start-up, and nothing a listing needs."""

PROBE = """
import json, sys
from debates.cli.main import main
sys.argv = ["m3d", *json.loads(sys.argv[1])]
try:
    main()
except SystemExit:
    pass
sys.stderr.write("MODULES=" + json.dumps(sorted({name.split(".")[0] for name in sys.modules})) + "\\n")
"""


def loaded_by(args: list[str]) -> set[str]:
    done = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], cwd=REPO, capture_output=True, text=True,
                          timeout=120, check=False)
    line = next((line for line in done.stderr.splitlines() if line.startswith("MODULES=")), None)
    assert line is not None, done.stderr[-2000:]
    assert "Traceback" not in done.stdout + done.stderr, done.stderr[-2000:]
    return set(json.loads(line.removeprefix("MODULES=")))


@pytest.mark.parametrize("args", [
    ["--help"], ["config"], ["config", "async"], ["config", "t2agent"], ["seats", "judged"], ["reproduce", "--list"],
    ["check", "--help"], ["tools"],
], ids=" ".join)
def test_a_printing_command_imports_no_model_runtime(args: list[str]) -> None:
    loaded = loaded_by(args)
    assert "debates" in loaded and "typer" in loaded  # the probe ran the command
    assert sorted(loaded & set(HEAVY)) == []


def test_the_probe_sees_a_heavy_import() -> None:
    """The check can fail: a command that runs a strategy's module does import AutoGen."""
    done = subprocess.run([sys.executable, "-c", "import sys, debates.strategies.builtin; print('autogen_core' in sys.modules)"],
                          cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert done.stdout.strip() == "True", done.stderr[-2000:]
