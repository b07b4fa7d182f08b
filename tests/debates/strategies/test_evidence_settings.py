"""Every strategy is held to the run's evidence settings: ``retrieval.leakage`` (here ``enabled: false``) and
the run's own ``reliability_list`` decide what its agents see, whether the evidence comes up front from
the run's evidence source or from their own searches.

Each strategy runs in a run session on a scripted model, with sources of the test's own (a reverse
image search and a web and Wikipedia search that know neither rule) that return a fact-checking page
and a page that only the run's list rates. With the run's settings the agents read the fact-check and
see the run's rating; with the library's defaults (the control) the fact-check is left out and the
page is unrated.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import pytest
from autogen_core.models import LLMMessage

from debates.config_loader import load_config, with_overrides
from debates.session import RunSession
from m3d_agents.backends.factory import BackendPool
from debates.strategies.agentfact.diagnostics import AgentFactDiagnostics
from m3d_agents.evidence import Evidence
from m3d_agents.sample import Sample, VideoRef
from m3d_agents.verdict import Verdict
from retrieval.config import LeakageSettings, RetrievalConfig
from retrieval.report import EvidenceLog
from retrieval.runpath import RunRetrieval
from tests.support.debate import answer
from tests.support.paths import EXAMPLE_IMAGE
from tests.support.scripted import ScriptedClient, scripted_backend, text_of
from tests.support.t2agent_script import StepCall, TreeScript
from tests.support.videos import make_clip

FACT_CHECK = "SNOPES-VERDICT: the storm photo is a composite, rated false."
RUMOUR = "RUMOURS-PAGE: the storm photo went round the forums."
Responder = Callable[[Sequence[LLMMessage], Mapping[str, Any]], str]


def pages(kind: str) -> list[Evidence]:
    return [
        Evidence(kind=kind, url="https://www.snopes.com/fact-check/storm-statue-photo/", domain="www.snopes.com",  # type: ignore[arg-type]
                 title="Did a storm hit the statue?", text=FACT_CHECK, reason="found by stub-lens (full match, rank 1)"),
        Evidence(kind=kind, url="https://rumours.example/storm", domain="rumours.example", title="Storm photo",  # type: ignore[arg-type]
                 text=RUMOUR, reason="found by stub-lens (partial match, rank 2)"),
    ]


class ReverseImageSource:
    async def gather(self, sample: Sample, ledger: Any = None) -> list[Evidence]:
        return pages("reverse_image")


class Search:
    async def answer(self, query: str, sample: Sample, ledger: Any = None) -> list[Evidence]:
        return pages("answer")


def own_sources() -> RunRetrieval:
    """Sources opened by the test, with no policy of their own: the session holds them to the configuration's."""
    search = Search()
    return RunRetrieval(mode="replay", log=EvidenceLog("replay", "a test's own sources"), evidence_source=ReverseImageSource(),
                        query_answerer=search, searchers={"web": search, "wikipedia": search})


def checked(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
    return json.dumps({"rationale": "looked at the evidence", "label": "real", "confidence": 0.6})


def debating(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
    return answer("real")


def searching_step(call: StepCall) -> str:
    """The text check looks the story up on Wikipedia first; every check then finds its part real."""
    if call.check == "text" and call.k == 1 and not call.must_finish:
        return "Thought 1: Who reported this photo?\nAction 1: Wikipedia[storm statue photo]"
    real = {"text": "TEXT SUPPORT", "image": "IMAGE SUPPORT", "cross_modal": "MATCH"}[call.check]
    return f"Thought {call.k}: Nothing contradicts it.\nAction {call.k}: Finish[{real}]"


def fact_checking(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
    prompt = text_of(messages)
    if "Task: agentfact/strategy" in prompt:
        return json.dumps({"reasoning_steps": [{"step": "Find the photo's origin", "method": "cross_verification",
                                                "details": "news reports"}],
                           "validation_list": [], "search_list": [{"information_needed": "origin of the storm photo"}]})
    if "Task: agentfact/queries" in prompt:
        return json.dumps({"queries": ["storm statue photo origin"]})
    return "I cannot say."


def verifying(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
    return "<think>The evidence above decides it.</think><answer>real</answer>"


POST = Sample(text="Storm clouds over the Statue of Liberty", images=[EXAMPLE_IMAGE])
CASES: dict[str, tuple[dict[str, Any], Responder]] = {
    "check": ({"parse_retries": 0}, checked),
    "self-consistency": ({"n": 1, "parse_retries": 0}, checked),
    "async": ({"max_rounds": 1}, debating),
    "t2agent": ({}, TreeScript(step=searching_step)),
    "agentfact": ({}, fact_checking),
    "factguard": ({"upfront_evidence": True, "describe_frames": False, "parse_retries": 0}, verifying),
}


async def run(name: str, retrieval: RetrievalConfig, tmp_path: Path) -> tuple[str, Verdict]:
    """Everything the strategy's agents were shown (prompts and the transcript they read), and the verdict."""
    changes, responder = CASES[name]
    config = with_overrides(load_config(name), retrieval=retrieval, **changes)
    client = ScriptedClient(responder, vision=True)
    pool = BackendPool()
    pool.add(scripted_backend(client, name="scripted"))
    sample = POST
    if name == "factguard":
        sample = Sample(text=POST.text, video=VideoRef(path=make_clip(tmp_path / "clip.mp4", seconds=3)))
    async with RunSession(config, pool, backend="scripted", sources=own_sources()) as session:
        verdict = await session.run(sample)
    seen = "\n".join([call.prompt for call in client.calls] + [turn.text for turn in verdict.transcript])
    return seen, verdict


@pytest.mark.parametrize("name", list(CASES))
async def test_each_strategy_honours_the_runs_leakage_setting_and_reliability_list(name: str, tmp_path: Path) -> None:
    ratings = tmp_path / "ratings.csv"
    ratings.write_text("domain,rating,note\nrumours.example,satire,the run's own list\n")
    ours = RetrievalConfig(leakage=LeakageSettings(enabled=False), reliability_list=ratings)
    seen, verdict = await run(name, ours, tmp_path)
    assert FACT_CHECK in seen, f"{name}: leakage.enabled: false lets the fact-checking page through"
    assert RUMOUR in seen and "satire" in seen, f"{name}: the run's reliability list rates the page"

    control, defaults = await run(name, RetrievalConfig(), tmp_path)
    assert RUMOUR in control, f"{name}: the control reads the evidence too"
    assert FACT_CHECK not in control and "satire" not in control, f"{name}: the library's defaults filter and do not rate"
    if name == "agentfact":
        assert isinstance(verdict.diagnostics, AgentFactDiagnostics) and isinstance(defaults.diagnostics, AgentFactDiagnostics)
        assert sum(verdict.diagnostics.leakage.values()) == 0, "AgentFact's re-checks use the run's settings"
        assert defaults.diagnostics.leakage["factcheck_domain"] == 1
