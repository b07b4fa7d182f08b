"""A verdict read back by any module of the package has its strategy's diagnostics model, without the strategy."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.support.paths import REPO

PROBE = """
import json, sys
from debates.eval.records import EvalRow  # what m3d report and m3d compare read rows with
from m3d_agents.verdict import Verdict
from tests.support.old_diagnostics import OLD_AGENTFACT, OLD_DEBATE, OLD_T2AGENT

read = {}
for old in (OLD_DEBATE, OLD_T2AGENT, OLD_AGENTFACT):
    written = Verdict(sample_id="s", label="fake", diagnostics=old).model_dump_json()
    read[type(Verdict.model_validate_json(written).diagnostics).__name__] = json.loads(written)["diagnostics"]["strategy"]
print(json.dumps({"read": read, "loaded": sorted({name.split(".")[0] for name in sys.modules})}))
"""


def test_a_fresh_process_reads_each_strategys_diagnostics_into_its_model_without_importing_the_strategy() -> None:
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    assert seen["read"] == {"DebateDiagnostics": "debate", "T2AgentDiagnostics": "t2agent", "AgentFactDiagnostics": "agentfact"}
    assert not {"autogen_core", "autogen_agentchat", "torch"} & set(seen["loaded"]), "the diagnostics models need no strategy"
