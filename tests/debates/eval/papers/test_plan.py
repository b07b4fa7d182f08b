"""``m3d reproduce TABLE --plan``: the rows, backends, tool backends, budgets and visible departures, with nothing called.

The keys are dummy values set in the environment (the conftest removes the real ones); the plan
only checks that a key is present, so nothing leaves the machine.
"""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from debates.cli.main import app
from debates.eval.papers.plan import PlanRequest, plan_table

ENV = {"COLUMNS": "400", "TERM": "dumb"}


def plan_output(tmp_path: Path, table: str, env: dict[str, str] | None = None, settings: str = "") -> str:
    config_file = tmp_path / "m3d.yaml"
    config_file.write_text(settings or "backend: local\n")
    result = CliRunner().invoke(app, ["reproduce", table, "--plan", "--config-file", str(config_file)], env={**ENV, **(env or {})})
    assert result.exit_code == 0, result.output
    return result.stdout


def departure_line(output: str, id_: str, rows: str = "") -> str:
    lines = [line for line in output.splitlines() if f"[{id_}]" in line and line.startswith(f"  {rows}")]
    assert len(lines) == 1, f"{id_} not printed once in:\n{output}"
    return lines[0]


def test_without_search_keys_the_llm_consensus_plan_says_the_rows_gather_no_evidence_and_why(tmp_path: Path) -> None:
    output = plan_output(tmp_path, "llm-consensus-table1")
    line = departure_line(output, "no-evidence")
    assert line.startswith("  async-ai, async, actor-skeptic, judged, disambiguation: [no-evidence] the rows will gather no "
                           "evidence"), "every row but async-closed, which asks for none"
    assert "google_vision: no GOOGLE_VISION_API_KEY" in line and "serpapi_lens: no SERPAPI_API_KEY and no public_image_url" in line
    ablation = departure_line(output, "without-external-information", "async:")
    assert "the paper's own ablation without external information" in ablation and "paper line 66-67, 71" in ablation
    ai = departure_line(output, "without-external-information", "async-ai:")
    assert "AI-framed row (75.2 accuracy)" in ai and "paper line 65-66, 71" in ai
    others = departure_line(output, "without-external-information", "actor-skeptic, judged, disambiguation:")
    assert "from their own knowledge only" in others
    assert "serper is listed but cannot run (no SERPER_API_KEY); web search falls back to duckduckgo" in output
    assert "plan only: nothing runs" in output and "budget per sample: at most 6 model calls" in output


def test_with_only_a_serper_key_the_plan_says_which_evidence_is_still_missing(tmp_path: Path) -> None:
    output = plan_output(tmp_path, "llm-consensus-table1", env={"SERPER_API_KEY": "dummy-serper-key"})
    line = departure_line(output, "no-evidence")
    assert ("serper and duckduckgo can answer only the searches the agents make themselves, so the pages that show the image "
            "are still missing") in line
    assert "google_vision: no GOOGLE_VISION_API_KEY" in line
    assert "[provider-serper]" not in output
    assert "dummy-serper-key" not in output


def test_with_a_google_vision_key_the_rows_gather_evidence(tmp_path: Path) -> None:
    output = plan_output(tmp_path, "llm-consensus-table1", env={"GOOGLE_VISION_API_KEY": "dummy", "SERPER_API_KEY": "dummy"})
    assert "[no-evidence]" not in output and "[without-external-information]" not in output
    assert "[leakage-filter]" in output, "the leakage filter runs where the paper had none"


def test_the_t2agent_plan_lists_the_stand_in_tools_and_where_they_run(tmp_path: Path) -> None:
    output = plan_output(tmp_path, "t2agent-table1")
    for tool in ("physics_check", "image_entities", "web_search", "wikipedia_search"):
        assert f"[stand-in-{tool.replace('_', '-')}] {tool} stands in for the paper's tool" in output
    assert "LLaVA-34B" in departure_line(output, "stand-in-physics-check") and "paper line 203" in output
    own = departure_line(output, "own-model-physics-check")
    assert own.startswith("  t2agent: ") and "runs on the agent's own model (local)" in own
    assert "tool physics_check: on local (the agent's backend); stands in for the paper's LLaVA-34B" in output
    assert "[text-only-backend]" in output and "[backbone]" in output
    assert "configuration t2agent, as above" in output


def test_a_tool_given_its_own_backend_is_planned_there_and_no_longer_a_departure(tmp_path: Path) -> None:
    settings = ("backend: local\nbackends:\n  llava: {kind: vllm, model: llava-v1.6-34b, base_url: 'http://127.0.0.1:9/v1'}\n"
                "tools:\n  physics_check: {backend: llava}\n")
    output = plan_output(tmp_path, "t2agent-table1", settings=settings)
    assert "tool physics_check: on llava (its own backend)" in output
    assert "[own-model-physics-check]" not in output and "[own-model-image-entities]" in output


def test_the_plan_reads_configurations_only(tmp_path: Path) -> None:
    plan = plan_table(PlanRequest(table="factguard-table1", env={}))
    factguard = next(row for row in plan.rows if row.config == "factguard")
    assert factguard.budget is not None and factguard.budget.calls == 2 and factguard.budget.answer_tokens == 768
    assert factguard.answer_tokens == 256, "the default backend is the embedded model, whose answers are capped at 256 tokens"
    ids = {group.departure.id for group in plan.departures}
    assert {"provider-serper", "asr-opt-in", "clip-scout-needs-video", "text-only-backend"} <= ids
    off = plan_table(PlanRequest(table="factguard-table1", retrieval="off", env={}))
    assert "no-searcher-fact-probe" in {group.departure.id for group in off.departures}


def test_t2agents_mmd_agent_rows_are_filled_with_the_chain_in_each_order(tmp_path: Path) -> None:
    """#49: Table 6's orders run the chained MMD-Agent, and Table 2's MMD-Agent rows run it over AMG's forgery types."""
    order = plan_output(tmp_path, "t2agent-table6")
    for config, roles in (("mmd-agent-match-text-image", "cross_modal -> text -> image"),
                          ("mmd-agent-image-match-text", "image -> cross_modal -> text"),
                          ("mmd-agent-wikipedia", "text -> image -> cross_modal")):
        assert f"configuration {config} (debate, chained_cascade: {roles})" in order
    assert "[no-searcher-" not in order and "[decoupled-cascade]" not in order
    amg = plan_output(tmp_path, "t2agent-table2")
    assert "not run (no configuration)" not in amg
    assert ("configuration mmd-agent-amg (debate, chained_cascade: image_fabrication -> non_evidential_image -> "
            "entity_inconsistency -> event_inconsistency -> time_inconsistency)") in amg
    assert "mmd-agent-amg: [amg-chain-ours]" in amg
