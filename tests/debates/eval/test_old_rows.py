"""A run folder written before diagnostics were typed still loads, and its rows report and review as new ones do."""

from __future__ import annotations

import json
from pathlib import Path

from debates.eval.records import RESULTS, read_rows
from debates.eval.score.metrics import compute_metrics
from debates.strategies.factguard.diagnostics import FactGuardDiagnostics
from m3d_agents.verdict import Verdict
from tests.support.old_diagnostics import OLD_FACTGUARD


def test_a_results_row_in_the_old_format_loads_and_reports(tmp_path: Path) -> None:
    row = {
        "sample_id": "p1", "index": 0, "seed": 7, "status": "ok", "taxonomy": "binary", "gold": "fake", "label": "fake",
        "gold_misinformation": True, "is_misinformation": True, "confidence": 0.9, "abstain_reason": None, "error": None,
        "latency_s": 3.0, "model_calls": 2, "prompt_tokens": 100, "completion_tokens": 20, "cache_hits": 0,
        "cost_usd": 0.0, "config": "factguard", "backend": "local",
        "verdict": {
            "sample_id": "p1", "taxonomy": "binary", "label": "fake", "is_misinformation": True, "confidence": 0.9,
            "rationale": "frames show an older flood", "findings": [], "evidence_ids": [], "evidence": [], "abstained": False,
            "abstain_reason": None, "transcript": [], "accounting": {"model_calls": 2}, "diagnostics": OLD_FACTGUARD,
            "config": "factguard", "backend": "local", "evidence_report": None, "explanation": None,
        },
    }
    (tmp_path / RESULTS).write_text(json.dumps(row) + "\n")
    rows, torn = read_rows(tmp_path / RESULTS)
    assert not torn and len(rows) == 1
    diagnostics = rows[0].diagnostics()
    assert isinstance(diagnostics, FactGuardDiagnostics) and diagnostics.tool_calls == {"clip_scout": 1}
    assert isinstance(Verdict.model_validate(rows[0].verdict).diagnostics, FactGuardDiagnostics)
    tools = compute_metrics(rows, "binary").tools
    assert tools is not None and tools.mean_calls == {"clip_scout": 1.0} and tools.mean_turns == 2.0
