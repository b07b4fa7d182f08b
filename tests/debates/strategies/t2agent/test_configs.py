"""The configurations of the tree search and of the MMD-Agent baselines: they load, run from the command
line, and the cascade's ``react`` turns and orders behave as the paper's baselines need."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping, Sequence

import pytest
from autogen_core.models import LLMMessage
from typer.testing import CliRunner

from debates.cli.main import app
from debates.debate_engine.config import DebateConfig
from debates.session import run_sample
from debates.strategies.t2agent.config import T2AgentConfig
from debates.config_loader import load_config
from m3d_agents.backends.factory import BackendPool
from debates.debate_engine.diagnostics import DebateDiagnostics
from debates.strategies.t2agent.diagnostics import T2AgentDiagnostics
from m3d_agents.evidence import Evidence
from m3d_agents.sample import Sample
from m3d_agents.verdict import Verdict
from tests.support.openai_stub_server import StubOpenAIServer, completion_body
from tests.support.paths import EXAMPLE_IMAGE, REPO
from tests.support.scripted import ScriptedClient, scripted_backend, text_of
from tests.support.selector_script import stub_answer
from tests.support.t2agent_script import stub_tree_answer

TREE_CONFIGS = ["t2agent", "t2agent-amg", "t2agent-base-tools", "t2agent-random-init", "t2agent-lean", "t2agent-filtered"]
PAPER_CONFIGS = ["t2agent", "t2agent-amg", "t2agent-base-tools", "t2agent-random-init"]
BASELINES = ["mmd-agent-wikipedia", "mmd-agent-tools", "mmd-agent-match-text-image", "mmd-agent-image-match-text"]
POST = Sample(text="The mayor opened the new bridge in Alphaville on Monday.", images=[EXAMPLE_IMAGE], taxonomy="m3d")


def test_the_tree_configurations_hold_the_papers_numbers_and_their_ablations() -> None:
    configs = {name: load_config(name) for name in TREE_CONFIGS}
    assert all(isinstance(c, T2AgentConfig) for c in configs.values())
    main = configs["t2agent"]
    assert isinstance(main, T2AgentConfig)
    assert (main.search.children, main.search.exploration, main.search.alpha) == (2, 2.0, 0.5)
    assert {s.name: list(s.tools) for s in main.subtasks} == {
        "text": ["Wikipedia", "Google"], "image": ["Detect"], "cross_modal": ["VQA", "Entity"]}
    assert configs["t2agent-random-init"].search.priors == "random"  # type: ignore[attr-defined]
    assert configs["t2agent-amg"].taxonomy == "amg" and len(configs["t2agent-amg"].subtasks) == 5  # type: ignore[attr-defined]
    assert main.bound() == 1 + 4 * (2 * 2 * 4 + 1)
    assert {s.name: list(s.tools) for s in configs["t2agent-base-tools"].subtasks} == {  # type: ignore[attr-defined]
        "text": ["Wikipedia"], "image": ["Detect"], "cross_modal": ["VQA"]}, "Detect is a base tool by the paper's elimination"


@pytest.mark.parametrize("name", PAPER_CONFIGS)
def test_the_paper_configurations_follow_the_paper_where_it_speaks(name: str) -> None:
    config = load_config(name)
    assert isinstance(config, T2AgentConfig) and config.retrieval is not None
    assert config.k == len(config.subtasks) + 1, "K leaves room to revisit a subtask"
    assert config.scores_see_image and config.trajectory_analysis == "detailed"
    assert all(s.sees_image for s in config.subtasks)
    assert not config.retrieval.leakage.enabled, "the paper filters no search result"
    assert "K" in config.description and "127, 287" in config.description
    listed = {d.id for d in config.departures}
    assert not listed & {"detect-asks-caption", "no-revisits", "scores-blind-and-brief", "base-lacks-detect"}, "fixed, not listed"
    assert "revisit-after-sweep" in listed and len(config.departures) <= 3


def test_the_filtered_variant_is_the_papers_search_with_the_leakage_filter_on() -> None:
    paper, filtered = load_config("t2agent"), load_config("t2agent-filtered")
    assert isinstance(paper, T2AgentConfig) and isinstance(filtered, T2AgentConfig)
    assert filtered.retrieval is not None and filtered.retrieval.leakage.enabled
    assert filtered.model_dump(exclude={"name", "description", "retrieval"}) == paper.model_dump(exclude={"name", "description", "retrieval"})


def test_validation_rejects_what_cannot_run() -> None:
    base = load_config("t2agent").model_dump()
    for change, message in [
        ({"subtasks": [{**base["subtasks"][0], "label": "fake"}]}, "not a forgery label"),
        ({"subtasks": [{**base["subtasks"][0], "tools": {"Look": "no_such_tool"}}]}, "unknown tool"),
        ({"subtasks": [base["subtasks"][0], {**base["subtasks"][1], "real_answer": "TEXT SUPPORT"}]}, "also an answer"),
        ({"real_label": "textual_veracity_distortion"}, "real_label"),
        ({"subtasks": [{**base["subtasks"][0], "prompt": "t2agent/nothing"}]}, "no prompt template"),
        ({"base_tools": ["Wikipedia", "Look"]}, "base_tools: Look not among the action verbs"),
    ]:
        with pytest.raises(ValueError, match=message):
            T2AgentConfig.model_validate({**base, **change})


@pytest.mark.parametrize("name", TREE_CONFIGS + BASELINES)
def test_every_new_configuration_runs_one_post_from_the_command_line(name: str, tmp_path: Path) -> None:
    def respond(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any], float]:
        return 200, completion_body(stub_tree_answer(body) or stub_answer(body)), 0.0

    with StubOpenAIServer(respond) as server:
        settings = tmp_path / "m3d.yaml"
        settings.write_text(f"backend: stub\nbackends:\n  stub: {{kind: vllm, model: test-model, base_url: '{server.base_url}', cache: false}}\n")
        result = CliRunner().invoke(app, [
            "debate", "--config", name, "--config-file", str(settings), "--json",
            "--text", (REPO / "examples" / "sample.txt").read_text().strip(), "--image", str(EXAMPLE_IMAGE),
        ])
    assert result.exit_code == 0, result.output
    verdict = Verdict.model_validate(json.loads(result.stdout))
    assert verdict.config == name and verdict.taxonomy == "binary"
    if name.startswith("t2agent"):
        assert verdict.label == "real", "every check found its part real with confidence 0.9"
        assert isinstance(verdict.diagnostics, T2AgentDiagnostics)
        assert verdict.diagnostics.stop_reason == "every subtask confirmed real"
    else:
        assert verdict.label == "fake" and isinstance(verdict.diagnostics, DebateDiagnostics)
        assert verdict.diagnostics.answer.label == "visual_veracity_distortion"
    assert server.requests


class Pages:
    def __init__(self) -> None:
        self.queries: list[str] = []

    async def answer(self, query: str, sample: Sample, ledger: Any = None) -> list[Evidence]:
        self.queries.append(query)
        return [Evidence(kind="wikipedia", url=f"https://en.wikipedia.org/wiki/{query}", text=f"{query} has a new bridge.")]


def cascade_script(text_answers: list[str]) -> Any:
    """Steps told apart by the step their request names (the chain's steps share one system prompt); the text
    step's react steps come from ``text_answers`` in order."""
    remaining = list(text_answers)

    def respond(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
        step = text_of(messages[1:])
        if "its TEXT is true" in step:
            return remaining.pop(0)
        if "its IMAGE is genuine" in step:
            return "Looks genuine.\nFinish[IMAGE SUPPORT]\nCONFIDENCE: 0.8"
        return "They fit.\nFinish[MATCH]\nCONFIDENCE: 0.7"

    return respond


async def run_cascade(name: str, text_answers: list[str]) -> tuple[Any, ScriptedClient, Pages]:
    client = ScriptedClient(cascade_script(text_answers))
    pool = BackendPool()
    pool.add(scripted_backend(client, name="scripted"))
    pages = Pages()
    config = load_config(name)
    assert isinstance(config, DebateConfig)
    from debates.strategy import RunContext
    from debates.strategies.debate.strategy import DebateStrategy

    ctx = RunContext(pool=pool, backend="scripted", searchers={"wikipedia": pages})
    verdict = await DebateStrategy(config).run(POST, ctx)
    return verdict, client, pages


async def test_mmd_agents_text_seat_searches_wikipedia_in_a_react_turn() -> None:
    verdict, client, pages = await run_cascade("mmd-agent-wikipedia", [
        "Thought 1: Is there such a bridge?\nAction 1: Wikipedia[Alphaville]",
        "Thought 2: The page confirms the bridge.\nAction 2: Finish[TEXT SUPPORT]",
    ])
    assert pages.queries == ["Alphaville"]
    assert verdict.label == "original" and [t.speaker for t in verdict.transcript] == ["text_agent", "image_agent", "cross_modal_agent"]
    text_turn = verdict.transcript[0]
    assert "Observation 1: Wikipedia results for 'Alphaville'" in text_turn.text and text_turn.stance == "TEXT SUPPORT"
    second_step = [c.prompt for c in client.calls if "its TEXT is true" in text_of(c.messages[1:])][1]
    assert "Your steps so far:" in second_step and "Alphaville has a new bridge." in second_step


async def test_a_react_seat_answering_another_checks_finish_is_asked_again() -> None:
    verdict, client, _ = await run_cascade("mmd-agent-wikipedia", [
        "Thought 1: They match.\nAction 1: Finish[MATCH]",
        "Thought 1: The text holds.\nAction 1: Finish[TEXT SUPPORT]",
    ])
    asked = [c for c in client.calls if "its TEXT is true" in text_of(c.messages[1:])]
    assert len(asked) == 2 and "Finish[MATCH]" in text_of(asked[1].messages)
    assert verdict.transcript[0].stance == "TEXT SUPPORT"


@pytest.mark.parametrize(("name", "order"), [
    ("mmd-agent-match-text-image", ["cross_modal_agent", "text_agent", "image_agent"]),
    ("mmd-agent-image-match-text", ["image_agent", "cross_modal_agent", "text_agent"]),
])
async def test_the_cascade_asks_its_seats_in_the_configured_order(name: str, order: list[str]) -> None:
    verdict, _, _ = await run_cascade(name, ["Thought 1: It holds.\nAction 1: Finish[TEXT SUPPORT]"])
    assert [t.speaker for t in verdict.transcript] == order and verdict.label == "original"


async def test_a_cascade_in_another_order_stops_at_its_first_distortion() -> None:
    client = ScriptedClient(lambda messages, kwargs: "Another place.\nFinish[MISMATCH]\nCONFIDENCE: 0.9")
    pool = BackendPool()
    pool.add(scripted_backend(client, name="scripted"))
    config = load_config("mmd-agent-match-text-image")
    assert isinstance(config, DebateConfig)
    verdict = await run_sample(config, POST, pool, backend="scripted")
    assert [t.speaker for t in verdict.transcript] == ["cross_modal_agent"]
    assert verdict.label == "cross_modal_consistency_distortion"


def test_m3d_debate_streams_every_expansion_of_the_search(tmp_path: Path) -> None:
    def respond(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any], float]:
        return 200, completion_body(stub_tree_answer(body) or "unexpected"), 0.0

    with StubOpenAIServer(respond) as server:
        settings = tmp_path / "m3d.yaml"
        settings.write_text(f"backend: stub\nbackends:\n  stub: {{kind: vllm, model: test-model, base_url: '{server.base_url}', cache: false}}\n")
        result = CliRunner().invoke(app, [
            "debate", "--config", "t2agent", "--config-file", str(settings), "--taxonomy", "m3d",
            "--text", "The mayor opened the new bridge on Monday.", "--image", str(EXAMPLE_IMAGE),
        ], env={"COLUMNS": "200", "TERM": "dumb"})
    assert result.exit_code == 0, result.output
    titles = [line for line in result.output.splitlines() if " · " in line]
    assert "prior · prior · round 0" in titles[0]
    for subtask, answer in (("text", "TEXT SUPPORT"), ("image", "IMAGE SUPPORT"), ("cross_modal", "MATCH")):
        assert sum(f"{subtask} · answer · " in t and answer in t for t in titles) == 2, "both children of the expansion"
        assert any(f"{subtask} · iteration · " in t for t in titles)
    assert "original" in result.output


def test_the_mmd_agent_baselines_differ_from_the_default_order_in_order_or_tools_only() -> None:
    """Paper line 274: Table 6's rows differ in their order only; Table 3's TOOLs adds the selected tools. Every
    baseline runs with the retrieval its searches need, so no Wikipedia or Google action answers 'unavailable'."""
    from debates.eval.score.departures import PlannedRun, asks_for_evidence, planned_departures
    from m3d_agents.backends.config import BackendConfig

    default = load_config("mmd-agent-wikipedia")
    assert isinstance(default, DebateConfig) and default.retrieval is not None
    for name in BASELINES:
        config = load_config(name)
        assert isinstance(config, DebateConfig) and config.protocol == "chained_cascade" and config.retrieval is not None
        assert asks_for_evidence(config)
        planned = {d.id for d in planned_departures(PlannedRun(config, "local", BackendConfig(kind="local"), env={}))}
        assert not any(i.startswith("no-searcher-") for i in planned), (name, planned)
        assert "decoupled-cascade" not in planned and "chain-as-requests" in planned
        if name in ("mmd-agent-match-text-image", "mmd-agent-image-match-text"):
            assert config.retrieval == default.retrieval
            assert sorted(config.seats, key=lambda s: s.role) == sorted(default.seats, key=lambda s: s.role)
            assert config.departures == default.departures
    tools = load_config("mmd-agent-tools")
    assert tools.retrieval is not None and tools.retrieval.web_search == ["serper", "duckduckgo"], "Google needs a searcher"
    without_block = load_config("mmd-agent-wikipedia").model_dump(exclude={"retrieval"})
    assert asks_for_evidence(DebateConfig.model_validate(without_block)), "a Wikipedia action asks for evidence, block or not"
    assert not asks_for_evidence(load_config("standard"))
