"""Greedy tool selection (Alg. 2) over the tree search: ``m3d select-tools --config t2agent``."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from debates.cli.main import app
from debates.strategies.t2agent.config import T2AgentConfig
from debates.config_loader import load_config
from tests.support.openai_stub_server import StubOpenAIServer, completion_body
from tests.support.paths import REPO, shared_data
from tests.support.t2agent_script import stub_tree_answer

IMAGES = {"fakes": ["sandy_fake_29", "sandy_fake_30"], "reals": ["sandy_real_01", "sandy_real_02"]}


def dev_folder(tmp_path: Path) -> Path:
    source = shared_data("mediaeval2016-dev")
    folder = tmp_path / "dev"
    for sub, names in IMAGES.items():
        (folder / "images" / "Hurricane Sandy" / sub).mkdir(parents=True)
        for name in names:
            shutil.copy(source / "images" / "Hurricane Sandy" / sub / f"{name}.jpg", folder / "images" / "Hurricane Sandy" / sub)
    wanted = [n for names in IMAGES.values() for n in names]
    rows = [line for line in (source / "posts.txt").read_text(encoding="utf-8").splitlines() if any(n in line for n in wanted)]
    (folder / "posts.txt").write_text("post_id\tpost_text\tuser_id\timage_id(s)\tusername\ttimestamp\tlabel\n" + "\n".join(rows))
    return folder


def test_with_tools_keeps_only_the_chosen_verbs_in_each_subtask() -> None:
    config = load_config("t2agent")
    assert isinstance(config, T2AgentConfig)
    trimmed = config.with_tools(["Wikipedia", "VQA"])
    assert {s.name: list(s.tools) for s in trimmed.subtasks} == {"text": ["Wikipedia"], "image": [], "cross_modal": ["VQA"]}
    assert list(config.subtask("text").tools) == ["Wikipedia", "Google"], "the loaded configuration is untouched"


def test_select_tools_runs_the_tree_search_for_every_tool_set_and_prints_each_step(tmp_path: Path) -> None:
    folder = dev_folder(tmp_path)
    menus: list[str] = []

    def respond(body: dict[str, Any], n: int) -> tuple[int, dict[str, Any], float]:
        text = str(body["messages"])
        if "Actions you may take" in text:
            menus.append(",".join(sorted(set(re.findall(r"- (\w+)\[", text)) - {"Finish"})))
        return 200, completion_body(stub_tree_answer(body) or "unexpected"), 0.0

    with StubOpenAIServer(respond) as server:
        settings = tmp_path / "m3d.yaml"
        settings.write_text(f"backends:\n  stub: {{kind: vllm, model: test-model, base_url: '{server.base_url}', cache: false}}\n")
        result = CliRunner().invoke(app, [
            "select-tools", "--config", "t2agent", "--dataset", f"mediaeval:{folder}", "--limit", "4", "--backend", "stub",
            "--config-file", str(settings), "--base", "Wikipedia", "--base", "VQA", "--candidate", "Google",
            "--candidate", "Entity", "--compare-to", "baseline",
        ], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "development subset: 4 posts (2 fake, 2 real)" in result.output
    assert "base {Wikipedia, VQA}: accuracy 0.500" in result.output
    assert re.search(r"\+ Google +-> \{Wikipedia, VQA, Google\}: accuracy 0\.500 dropped", result.output)
    assert re.search(r"\+ Entity +-> \{Wikipedia, VQA, Entity\}: accuracy 0\.500 dropped", result.output)
    assert "chosen: {Wikipedia, VQA} with accuracy 0.500" in result.output
    assert set(menus) == {"Wikipedia", "", "VQA", "Google,Wikipedia", "Entity,VQA"}, "each trial offered exactly its tools"


def test_select_tools_refuses_a_configuration_without_a_toolbox(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["select-tools", "--config", "async", "--dataset", f"mediaeval:{tmp_path}"])
    assert result.exit_code == 2 and "cannot be evaluated" in result.output and "t2agent" in result.output


MMFAKEBENCH = REPO / "tests" / "fixtures" / "datasets" / "MMFakeBench_val" / "source" / "MMFakeBench_val.json"


def mmfakebench_answer(body: dict[str, Any]) -> str:
    """The cross-modal check is searched first. With Google the text check refutes the rider's post; with Entity the
    cross-modal check calls the flood and the rider's post mismatched, which for the rider is a wrong class."""
    prompt = _text(body)
    if "The likelihoods are" in prompt:
        return "A quick look. The likelihoods are [0.1, 0.1, 0.9]"
    if "correctness score is" in prompt:
        return "The steps are sound. The correctness score is 9"
    if "reliability score is" in prompt:
        return "The answer follows from the steps. The reliability score is 9"
    menu = re.search(r"- Finish\[([^\]]+)\] or Finish\[([^\]]+)\]: ends the check", prompt)
    assert menu is not None, prompt[:200]
    fake, real = menu.groups()
    verbs = set(re.findall(r"^- (\w+)\[", prompt, re.MULTILINE))
    rider, flood = "rode a horse" in prompt, "flooded street" in prompt
    if fake == "TEXT REFUTE":
        answer = fake if "Google" in verbs and rider else real
    elif fake == "MISMATCH":
        answer = fake if "Entity" in verbs and (rider or flood) else real
    else:
        answer = real
    return f"Thought 1: Judged from what I have.\nAction 1: Finish[{answer}]"


def _text(body: dict[str, Any]) -> str:
    parts = []
    for message in body["messages"]:
        content = message["content"]
        parts.extend([content] if isinstance(content, str) else [p.get("text", "") for p in content if isinstance(p, dict)])
    return "\n".join(parts)


def test_select_tools_runs_the_papers_selection_on_mmfakebench_with_four_class_accuracy(tmp_path: Path) -> None:
    with StubOpenAIServer(lambda body, n: (200, completion_body(mmfakebench_answer(body)), 0.0)) as server:
        settings = tmp_path / "m3d.yaml"
        settings.write_text(f"backends:\n  stub: {{kind: vllm, model: test-model, base_url: '{server.base_url}', cache: false}}\n")
        result = CliRunner().invoke(app, [
            "select-tools", "--config", "t2agent", "--dataset", f"mmfakebench:{MMFAKEBENCH}", "--limit", "100",
            "--backend", "stub", "--config-file", str(settings),
        ], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert ("development subset: 3 posts (1 cross_modal_consistency_distortion, 1 original, 1 textual_veracity_distortion);"
            " accuracy over these 3 gold labels") in result.output
    assert "base {Wikipedia, Detect, VQA}: accuracy 0.333" in result.output, "the paper's base set, from the configuration"
    assert re.search(r"\+ Google +-> \{Wikipedia, Detect, VQA, Google\}: accuracy 0\.667 kept", result.output)
    assert re.search(r"\+ Entity +-> \{Wikipedia, Detect, VQA, Google, Entity\}: accuracy 0\.667 dropped", result.output), (
        "the rider's post called a mismatch is fake but of the wrong class, so it is wrong under the four classes")
    assert "chosen: {Wikipedia, Detect, VQA, Google} with accuracy 0.667" in result.output
