"""The fake-class row in FactGuard's layout, and tool statistics in the report of a scripted FactGuard run."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import pytest
from autogen_core.models import LLMMessage

from debates.eval.run.batch import BatchRunner
from debates.session import RunSession
from debates.eval.records import RunManifest
from debates.eval.score.metrics import compute_metrics
from debates.eval.records import EvalRow
from debates.eval.score.report import write_report
from debates.config_loader import load_config, with_overrides
from m3d_agents.backends.factory import BackendPool
from m3d_agents.sample import Sample, VideoRef
from tests.support.scripted import ScriptedClient, scripted_backend, text_of
from tests.support.videos import make_clip


def row(i: int, gold: str, label: str | None) -> EvalRow:
    return EvalRow(sample_id=str(i), index=i, seed=0, status="ok" if label else "abstained", taxonomy="binary", gold=gold,
                   label=label, gold_misinformation=gold == "fake", is_misinformation=None if label is None else label == "fake",
                   config="factguard", backend="scripted")


def test_fake_class_f1_is_the_harmonic_mean_of_its_precision_and_recall() -> None:
    pairs = [("fake", "fake"), ("fake", "fake"), ("fake", "real"), ("fake", None), ("real", "fake"), ("real", "real"), ("real", "real")]
    m = compute_metrics([row(i, g, p) for i, (g, p) in enumerate(pairs)], "binary")
    assert m.fake_class is not None
    assert (m.fake_class.precision, m.fake_class.recall) == pytest.approx((2 / 3, 2 / 4))
    p, r = m.fake_class.precision, m.fake_class.recall
    assert m.fake_class.f1 == pytest.approx(2 * p * r / (p + r)) and m.fake_class.accuracy == pytest.approx(4 / 7)
    assert m.tools is None, "no verdict reported tool calls"


SCOUT = '<tool_call>{"name": "clip_scout", "arguments": {"start_s": 0, "end_s": 2}}</tool_call>'


def respond(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
    prompt = text_of(messages)
    if "Results of your tool calls" in prompt:
        return "<think>seen</think><answer>fake</answer>"
    if "tool post" in prompt:
        return f"<think>look</think>{SCOUT}"
    return "<think>plain</think><answer>real</answer>"


async def test_the_report_lists_tool_statistics(tmp_path: Path) -> None:
    clip = make_clip(tmp_path / "clip.mp4", seconds=3)
    samples = [Sample(text=f"{kind} post {i}", video=VideoRef(path=clip), gold_label="fake")
               for i, kind in enumerate(["tool", "tool", "plain", "plain"])]
    pool = BackendPool()
    pool.add(scripted_backend(ScriptedClient(respond), name="scripted"))
    config = with_overrides(load_config("factguard"), describe_frames=False, artifacts_dir=str(tmp_path / "grids"))
    path = tmp_path / "config.yaml"
    path.write_text(json.dumps(config.model_dump(mode="json")))
    manifest = RunManifest(config=str(path), dataset="test", backend="scripted", seed=0, taxonomy="binary")
    async with RunSession(config, pool, backend="scripted", retrieval="off") as session:
        await BatchRunner(str(path), samples, session, tmp_path / "run", manifest).run()
    summary = write_report(tmp_path / "run")
    tools = summary.metrics.tools
    assert tools is not None and tools.samples == 4 and tools.share_using_tools == 0.5
    assert tools.mean_calls == {"clip_scout": 0.5} and tools.mean_turns == 1.5
    report = (tmp_path / "run" / "report.md").read_text()
    assert "## Tool use" in report and "| mean clip_scout calls per sample | 0.50 |" in report
    assert "| Acc | Prec | Rec | F1 |" in report and "| 50.0 | 100.0 | 50.0 | 66.7 |" in report
