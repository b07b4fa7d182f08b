"""The dual reward: score reading and mapping, the reward formula, and what each score prompt shows."""

from __future__ import annotations

import re

import pytest

from debates.strategies.t2agent.scoring import read_score, reward, unit_score
from debates.config_loader import load_config
from debates.session import run_sample
from m3d_agents.backends.factory import BackendPool
from m3d_agents.errors import ParseError
from m3d_agents.sample import Sample
from tests.support.paths import EXAMPLE_IMAGE
from tests.support.scripted import ScriptedClient, scripted_backend
from tests.support.t2agent_script import StepCall, TreeScript


def test_scores_are_read_from_the_closing_phrase_and_mapped_to_tenths() -> None:
    assert read_score("The steps are sound. The correctness score is 7") == pytest.approx(0.7)
    assert read_score("Well supported.\nThe reliability score is 8") == pytest.approx(0.8)
    assert read_score("The reliability score is 10", "ninth") == pytest.approx(1.0)
    assert unit_score(1, "ninth") == 0.0 and unit_score(1) == pytest.approx(0.1)
    for bad in ("The correctness score is 11", "I would say it is fine.", "The score is 0"):
        with pytest.raises(ParseError):
            read_score(bad)


def test_the_reward_weighs_both_scores_and_a_missing_one_adds_nothing() -> None:
    assert reward(0.5, 0.6, 0.8) == pytest.approx(0.7)
    assert reward(0.5, 0.6, None) == pytest.approx(0.3)
    assert reward(0.25, 0.4, 0.8) == pytest.approx(0.7)


async def test_the_trajectory_prompt_holds_the_whole_path_and_the_confidence_prompt_the_observations_and_answer() -> None:
    def step(call: StepCall) -> str:
        if call.check == "text" and call.k == 1:
            return "Thought 1: Who is the mayor?\nAction 1: Wikipedia[Alphaville]"
        if call.check == "text":
            return f"Thought {call.k}: The page names the same mayor (call {call.seed}).\nAction {call.k}: Finish[TEXT SUPPORT]"
        return f"Thought {call.k}: Fine.\nAction {call.k}: Finish[{'MATCH' if call.check == 'cross_modal' else 'IMAGE SUPPORT'}]"

    class Pages:
        async def answer(self, query, sample, ledger=None):  # type: ignore[no-untyped-def]
            from m3d_agents.evidence import Evidence

            return [Evidence(kind="wikipedia", url="https://en.wikipedia.org/wiki/Alphaville", text="Its mayor is Jane Roe.")]

    client = ScriptedClient(TreeScript(step=step, trajectory=lambda p: 7, confidence=lambda p: 9))
    pool = BackendPool()
    pool.add(scripted_backend(client, name="scripted"))
    sample = Sample(text="Mayor Jane Roe opened the bridge in Alphaville.", images=[EXAMPLE_IMAGE], taxonomy="m3d")
    verdict = await run_sample(load_config("t2agent"), sample, pool, backend="scripted", searchers={"wikipedia": Pages()})
    scored = [c.prompt for c in client.calls if "correctness score is" in c.prompt]
    deep = [p for p in scored if "Action 2: Finish[TEXT SUPPORT]" in p]
    assert deep, "the S_T of an answer at depth 2 was asked"
    path = deep[0].split("The agent's steps so far:")[1]
    assert re.search(r"Thought 1: Who is the mayor\?\nAction 1: Wikipedia\[Alphaville\]\nObservation 1:\s.*Jane Roe", path, re.S)
    assert "Thought 2: The page names the same mayor" in path and "Mayor Jane Roe opened the bridge" in deep[0]
    confidence = next(c.prompt for c in client.calls if "reliability score is" in c.prompt and "TEXT SUPPORT" in c.prompt)
    assert "Observation 1:" in confidence and "Its mayor is Jane Roe." in confidence
    assert "The agent's answer: Finish[TEXT SUPPORT]" in confidence and "Final thought: The page names the same mayor" in confidence
    text = next(s for s in verdict.diagnostics.search.subtasks if s.name == "text")
    assert text.reward == pytest.approx(0.5 * 0.7 + 0.5 * 0.9) and text.status == "pruned"
