"""Departures as data: every configuration named after a paper lists its departures, and a run adds what it detects."""

from __future__ import annotations

import re
from typing import Any

import pytest

from debates.config_loader import available_configs, load_config, parse_config
from debates.eval.records import EvalRow
from debates.eval.score.departures import PlannedRun, planned_departures, row_departures, run_shares
from m3d_agents.backends.config import BackendConfig, ToolBinding
from m3d_agents.errors import InputError
from tests.support.paths import REPO

PAPERS = REPO.parent / "shared" / "papers"
"""The papers' text beside the repository, as in CI; a plain clone skips the line check."""
PAPER_FILES = {"LLM-Consensus": "llm-consensus", "AgentM3D": "agentm3d", "T2Agent": "t2agent", "AgentFact": "agentfact",
               "FactGuard": "factguard"}
PAPER_NAMED = re.compile(r"^(async|sync|judged|actor-skeptic|disambiguation|agentm3d|mmd-agent|t2agent|agentfact|factguard)")
LOCAL = BackendConfig(kind="local")
VISION = BackendConfig(kind="vllm", model="Qwen/Qwen3-VL-8B-Instruct", base_url="http://127.0.0.1:9/v1")


def lines_of(cited: str) -> list[int]:
    return [int(n) for part in cited.split(",") for n in part.strip().split("-")]


NAMED = [n for n in available_configs() if PAPER_NAMED.match(n)]


def test_the_paper_named_configurations_are_the_five_papers_settings() -> None:
    assert len(NAMED) >= 33
    for expected in ("async", "async-ai", "sync", "judged", "actor-skeptic", "disambiguation", "agentm3d", "mmd-agent",
                     "mmd-agent-bon", "mmd-agent-wikipedia", "t2agent", "t2agent-amg", "agentfact", "agentfact-no-ir",
                     "factguard", "factguard-teacher"):
        assert expected in NAMED


@pytest.mark.parametrize("name", NAMED)
def test_every_configuration_named_after_a_paper_lists_its_departures(name: str) -> None:
    config = load_config(name)
    assert config.paper in PAPER_FILES and config.departures, f"{name} names its paper and lists its departures"
    for departure in config.departures:
        assert departure.text.count(". ") == 0 and departure.text.endswith("."), f"{name}/{departure.id}: one sentence"


@pytest.mark.parametrize("name", NAMED)
def test_every_cited_line_is_a_line_of_the_paper(name: str) -> None:
    config = load_config(name)
    assert config.paper is not None
    text = PAPERS / f"{PAPER_FILES[config.paper]}.txt"
    if not text.exists():
        pytest.skip(f"needs the papers' text at {PAPERS}")
    length = len(text.read_text(encoding="utf-8").splitlines())
    cited = [d.paper_line for d in config.departures] + [t.paper.paper_line for t in config.tools.values() if t.paper]
    assert all(1 <= n <= length for line in cited for n in lines_of(line)), f"{name} cites lines of {text.name}"


def test_our_own_settings_name_no_paper() -> None:
    for name in ("check", "standard", "self-consistency"):
        config = load_config(name)
        assert config.paper is None and not config.departures


def test_agentm3ds_bon_rows_declare_their_reward() -> None:
    """AgentM3D Table 1's BoN rows run ``bon``: its reward is an LLM judge where the paper's is GRM-Gemma2-2B (line 213)."""
    config = load_config("bon")
    assert config.paper == "AgentM3D"
    reward = {d.id: d for d in config.departures}["reward-llm-judge"]
    assert "GRM-Gemma2-2B" in reward.text and "213" in reward.paper_line
    assert "[reward-llm-judge]" in {d.line()[:18] for d in planned_departures(PlannedRun(config, "local", LOCAL, env={}))}


def test_the_ai_framed_rows_do_not_call_themselves_the_human_framed_ablation() -> None:
    """LLM-Consensus Table 1: 77.1 is the human-framed row without external information; async-ai is the 75.2 row."""
    for name in ("async-ai", "async-ai-three"):
        text = {d.id: d.text for d in load_config(name).departures}["without-external-information"]
        assert "75.2" in text and "human-framed" in text and "is the paper's own ablation" not in text


def test_departures_name_their_paper_and_ids_do_not_repeat() -> None:
    base = load_config("check").model_dump(exclude_none=True)
    one = {"id": "x", "text": "Something differs from the paper.", "paper_line": "12"}
    with pytest.raises(InputError, match="name the paper they depart from"):
        parse_config({**base, "departures": [one]}, "mine.yaml")
    with pytest.raises(InputError, match="ids repeat"):
        parse_config({**base, "paper": "T2Agent", "departures": [one, one]}, "mine.yaml")
    with pytest.raises(InputError, match="paper_line"):
        parse_config({**base, "paper": "T2Agent", "departures": [{**one, "paper_line": "page 3"}]}, "mine.yaml")


def ids(plan: PlannedRun) -> dict[str, str]:
    return {d.id: d.text for d in planned_departures(plan)}


def test_conditional_departures_hold_only_in_the_runs_they_describe() -> None:
    config = load_config("async")
    keyless = ids(PlannedRun(config, "local", LOCAL, env={}))
    assert "without-external-information" in keyless and "no-evidence" in keyless and "leakage-filter" in keyless
    keyed = ids(PlannedRun(config, "local", LOCAL, env={"GOOGLE_VISION_API_KEY": "dummy"}))
    assert "without-external-information" not in keyed and "no-evidence" not in keyed
    replay = ids(PlannedRun(config, "local", LOCAL, mode="replay", env={}))
    assert "retrieval-replay" in replay and "no-evidence" not in replay, "a replay asks no provider, so needs no key"
    off = ids(PlannedRun(config, "local", LOCAL, mode="off", env={}))
    assert "retrieval-off" in off and "leakage-filter" not in off and "no-evidence" not in off
    data = config.model_dump(exclude_none=True)
    data["retrieval"]["leakage"] = {"enabled": False}
    assert "leakage-filter" not in ids(PlannedRun(parse_config(data, "t"), "local", LOCAL, env={"GOOGLE_VISION_API_KEY": "k"}))


def test_a_text_only_backend_and_a_tool_on_the_agents_model_are_detected() -> None:
    config = load_config("t2agent")
    local = ids(PlannedRun(config, "local", LOCAL, env={}))
    assert "text-only-backend" in local and "own-model-physics-check" in local
    assert "stand-in-physics-check" in local, "the configuration's stand-in tools are listed too"
    own = ids(PlannedRun(config, "qwen", VISION, file_tools={"physics_check": ToolBinding(backend="llava")}, env={}))
    assert "text-only-backend" not in own and "own-model-physics-check" not in own and "own-model-image-entities" in own


def row(sample: str, verdict: dict[str, Any] | None, status: str = "ok") -> EvalRow:
    return EvalRow(sample_id=sample, index=0, seed=0, status=status, taxonomy="binary", config="c", backend="b",  # type: ignore[arg-type]
                   verdict=verdict)


def test_the_rows_show_samples_without_evidence_and_tools_that_could_not_run() -> None:
    tools = {"fact_probe": {"calls": 3, "unavailable": 3}, "clip_scout": {"calls": 1, "unavailable": 0}}
    rows = [
        row("a", {"evidence_ids": ["e1"], "accounting": {"tools": tools}}),
        row("b", {"evidence": [{"id": "e2", "kept": False}], "accounting": {"tools": {"fact_probe": {"calls": 1, "unavailable": 1}}}}),
        row("c", {"evidence": [{"id": "e3", "kept": True}]}),
        row("d", None, status="error"),
    ]
    shares = run_shares(rows)
    assert (shares.samples, shares.no_evidence) == (3, 1)
    assert shares.no_evidence_share == pytest.approx(1 / 3) and shares.unavailable_share == pytest.approx(4 / 5)
    found = {d.id: d.text for d in row_departures(shares, asks_for_evidence=True)}
    assert found == {"samples-without-evidence": "1 of 3 samples (33%) ended with no evidence item",
                     "unavailable-fact-probe": "fact_probe answered 'unavailable' on 4 of 4 calls (100%)"}
    assert "samples-without-evidence" not in {d.id for d in row_departures(shares, asks_for_evidence=False)}

