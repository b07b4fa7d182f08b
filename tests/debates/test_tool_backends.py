"""A tool on a backend of its own: its requests go there and nowhere else, and the ledger names it.

Two loopback servers in the OpenAI format: ``first`` answers the tree search's agent, ``second``
only the counterfactual detector (``tools: {physics_check: {backend: second}}``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from debates.config_loader import load_config, parse_config
from debates.session import run_sample
from debates.tool_settings import ToolSettings, merged_tools
from m3d_agents.backends.config import BackendSettings, ToolBinding, load_backend_settings
from m3d_agents.backends.factory import BackendPool
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.errors import InputError
from m3d_agents.media.images import prepare_sample
from m3d_agents.sample import Sample
from m3d_agents.tools.cards import ToolContext, ToolSetup
from m3d_agents.tools.catalogue import default_registry
from tests.support.openai_stub_server import StubOpenAIServer, completion_body
from tests.support.paths import EXAMPLE_IMAGE
from tests.support.scripted import ScriptedClient, scripted_backend

POST = Sample(text="The mayor opened the new bridge in Alphaville on Monday.", images=[EXAMPLE_IMAGE], taxonomy="m3d")
PHYSICS = "Look at the attached image alone and ask whether the scene"


def prompt_of(body: dict[str, Any]) -> str:
    parts = []
    for message in body.get("messages", []):
        content = message.get("content", "")
        parts += [content] if isinstance(content, str) else [p.get("text", "") for p in content if isinstance(p, dict)]
    return "\n".join(parts)


def agent_answer(body: dict[str, Any], _n: int) -> tuple[int, dict[str, Any], float]:
    """The tree search: the image check calls Detect first, then every check finds its part real."""
    prompt = prompt_of(body)
    if "The likelihoods are" in prompt:
        count = int(re.search(r"with (\d+) numbers", prompt).group(1))  # type: ignore[union-attr]
        text = "The likelihoods are [" + ", ".join(["0.4"] * count) + "]"
    elif "correctness score is" in prompt:
        text = "Sound steps. The correctness score is 7"
    elif "reliability score is" in prompt:
        text = "It follows. The reliability score is 9"
    else:
        menu = re.search(r"- Finish\[([^\]]+)\] or Finish\[([^\]]+)\]: ends the check", prompt)
        assert menu is not None, prompt[:200]
        if menu.group(1) == "IMAGE REFUTE" and "Write step 1 now" in prompt:
            text = "Thought 1: Check the scene for impossible physics.\nAction 1: Detect[image]"
        else:
            text = f"Thought 1: Nothing contradicts it.\nAction 1: Finish[{menu.group(2)}]"
    return 200, completion_body(text), 0.0


def detector_answer(body: dict[str, Any], _n: int) -> tuple[int, dict[str, Any], float]:
    verdict = {"plausible": True, "problems": [], "rationale": "light and shadows agree"}
    return 200, completion_body(json.dumps(verdict), prompt_tokens=40, completion_tokens=9), 0.0


def settings_file(tmp_path: Path, first: str, second: str, extra: str = "") -> Path:
    path = tmp_path / "m3d.yaml"
    path.write_text(
        "backend: first\nbackends:\n"
        f"  first: {{kind: vllm, model: agent-model, base_url: '{first}', vision: true, cache: false}}\n"
        f"  second: {{kind: vllm, model: detector-model, base_url: '{second}', vision: true, cache: false}}\n" + extra
    )
    return path


async def test_a_tool_with_its_own_backend_sends_its_requests_there_only(tmp_path: Path) -> None:
    data = load_config("t2agent").model_dump(exclude_none=True)
    data["tools"]["physics_check"]["backend"] = "second"
    config = parse_config(data, "test")
    with StubOpenAIServer(agent_answer) as first, StubOpenAIServer(detector_answer) as second:
        pool = BackendPool(load_backend_settings(settings_file(tmp_path, first.base_url, second.base_url)))
        ledger = UsageLedger()
        try:
            verdict = await run_sample(config, POST, pool, ledger=ledger)
        finally:
            await pool.close()
    assert second.requests, "the image check called Detect"
    assert all(PHYSICS in prompt_of(body) for body in second.requests), "only the detector's calls reach the second server"
    assert all(body["model"] == "detector-model" for body in second.requests)
    assert not any(PHYSICS in prompt_of(body) for body in first.requests), "no detector call reaches the agent's server"
    tool_calls = [r for r in ledger.records if r.role == "physics_check"]
    assert len(tool_calls) == len(second.requests) and {r.backend for r in tool_calls} == {"second"}
    assert {r.backend for r in ledger.records if r.role != "physics_check"} == {"first"}
    accounting = verdict.accounting
    assert accounting.by_role["physics_check"].calls == len(second.requests)
    assert accounting.by_backend["second"].prompt_tokens == 40 * len(second.requests)
    assert accounting.by_backend["first"].calls == len(first.requests)
    assert accounting.tools["physics_check"].calls >= 1 and accounting.tools["physics_check"].unavailable == 0


async def test_the_config_file_gives_a_tool_its_backend_for_every_configuration(tmp_path: Path) -> None:
    with StubOpenAIServer(agent_answer) as first, StubOpenAIServer(detector_answer) as second:
        extra = "tools:\n  physics_check: {backend: second}\n"
        pool = BackendPool(load_backend_settings(settings_file(tmp_path, first.base_url, second.base_url, extra)))
        try:
            verdict = await run_sample("t2agent", POST, pool)
        finally:
            await pool.close()
    assert second.requests and all(PHYSICS in prompt_of(body) for body in second.requests)
    assert verdict.accounting.by_backend["second"].calls == len(second.requests)


async def test_a_tool_whose_backend_is_text_only_says_so_and_asks_nothing() -> None:
    blind = ScriptedClient(script=[])
    seeing = ScriptedClient(script=[], vision=True)
    tools = ToolSetup(backends={"physics_check": scripted_backend(blind, name="blind")})
    ledger = UsageLedger()
    context = ToolContext(prepare_sample(POST), ledger=ledger, backend=scripted_backend(seeing, name="agent"),
                          setup=tools)
    answer = await default_registry().bind("physics_check", context)()
    assert answer == "physics_check: unavailable: blind is text-only"
    assert not blind.calls and not seeing.calls
    assert ledger.accounting().tools["physics_check"].model_dump() == {"calls": 1, "unavailable": 1}


def test_the_configuration_wins_where_both_set_a_field() -> None:
    own = {"physics_check": ToolSettings(backend="mine"), "learned_detector": ToolSettings()}
    from_file = {"physics_check": ToolBinding(backend="theirs"), "learned_detector": ToolBinding(model=Path("/m/ckpt")),
                 "image_entities": ToolBinding(backend="theirs")}
    merged = merged_tools(own, from_file)
    assert merged["physics_check"].backend == "mine"
    assert merged["learned_detector"].model == Path("/m/ckpt")
    assert merged["image_entities"].backend == "theirs"


@pytest.mark.parametrize("tools, field, message", [
    ({"no_such_tool": {"backend": "local"}}, "tools", "unknown tool 'no_such_tool'"),
    ({"ocr": {"backend": "local"}}, "tools", "ocr calls no model"),
    ({"physics_check": {"model": "/tmp/x.pt"}}, "tools", "physics_check loads no weights"),
])
def test_tool_settings_that_cannot_apply_are_one_line(tools: dict[str, Any], field: str, message: str) -> None:
    data = {**load_config("check").model_dump(exclude_none=True), "tools": tools}
    with pytest.raises(InputError, match=message) as caught:
        parse_config(data, "mine.yaml")
    assert caught.value.field.startswith(field)


async def test_a_tool_backend_that_is_not_configured_is_named_before_any_call() -> None:
    data = load_config("t2agent").model_dump(exclude_none=True)
    data["tools"]["physics_check"]["backend"] = "nowhere"
    pool = BackendPool()
    with pytest.raises(InputError, match="unknown backend 'nowhere'") as caught:
        await run_sample(parse_config(data, "test"), POST, pool)
    assert caught.value.field == "tools.physics_check.backend"


def test_the_config_file_names_only_configured_backends(tmp_path: Path) -> None:
    path = tmp_path / "m3d.yaml"
    path.write_text("tools:\n  physics_check: {backend: llava}\n")
    with pytest.raises(InputError, match="tools.physics_check.backend: unknown backend 'llava'"):
        load_backend_settings(path)
    assert BackendSettings.model_validate({"backends": {"llava": {"kind": "vllm"}},
                                           "tools": {"physics_check": {"backend": "llava"}}}).tools["physics_check"].backend == "llava"


async def test_agentm3ds_logic_check_runs_on_the_backend_the_run_gives_it() -> None:
    from tests.support.cascade import M3D_SAMPLE, bon_config, by_candidate, finish
    from tests.support.debate import seat_pool
    from tests.support.selector_script import SelectorScript

    script = SelectorScript(
        answers={"text": lambda i: finish("TEXT REFUTE", f"CAND-{i}")},
        reward=by_candidate({0: 0.9, 1: 0.1, 2: 1.0, 3: 1.0, 4: 1.0}),
        critique=lambda prompt: "Sound. The score is 10" if "CAND-0" in prompt else "Weak. The score is 1",
    )
    config = bon_config("mmd-agent-bon", critique=True, critic_format="prose", early_stop=True, scoring="lazy", tau=0.5)
    config = config.model_copy(update={"tools": {"logic_check": ToolSettings(backend="qwen4b")}})
    config, pool, clients = seat_pool(config, {"text_agent": script})
    checker = ScriptedClient(['{"consistent": false, "issues": ["born in 1990 but voted in 1985"], "rationale": "dates"}'])
    pool.add(scripted_backend(checker, name="qwen4b"))
    verdict = await run_sample(config, M3D_SAMPLE, pool)
    check = "Check the claim below for internal logic"
    assert len(checker.calls) == 1 and check in checker.calls[0].prompt
    assert not any(check in c.prompt for c in clients["text_agent"].calls), "the agent's backend is not asked"
    critiques = [c.prompt for c in clients["text_agent"].calls if "born in 1990 but voted in 1985" in c.prompt]
    assert critiques, "the critic reads the report the checker wrote"
    assert verdict.accounting.by_backend["qwen4b"].calls == 1 and verdict.accounting.by_agent["logic_check"].calls == 1
