"""The LLM-Consensus configurations as its paper describes them: two debaters, its prompts, its
framing, its disambiguation schedule and its retrieval. Three-debater variants keep names of their own."""

from __future__ import annotations

import json
from string import Template
from typing import Any, Mapping, Sequence

from autogen_core.models import LLMMessage

import prompts
from debates.debate_engine.config import DebateConfig
from debates.session import run_sample
from debates.config_loader import builtin_config_names, load_config
from m3d_agents.datasets import load_dataset
from m3d_agents.evidence import Evidence
from m3d_agents.sample import Sample, SampleMetadata
from tests.support.debate import SAMPLE, answer, prompts_of, seat_pool
from tests.support.paths import REPO
from tests.support.scripted import text_of

PAPER = ["async", "async-ai", "sync", "disambiguation", "disambiguation-sync"]
FIXTURES = REPO / "tests" / "fixtures" / "datasets"


def debate_config(name: str) -> DebateConfig:
    config = load_config(name)
    assert isinstance(config, DebateConfig)
    return config


def test_configurations_named_after_the_paper_use_two_debaters_and_the_three_debater_variants_are_named() -> None:
    for name in PAPER:
        assert [s.name for s in debate_config(name).seats] == ["agent_a", "agent_b"], name
    for name in ("async-three", "async-ai-three", "sync-three", "disambiguation-three"):
        assert len(debate_config(name).seats) == 3, name
    assert debate_config("disambiguation").protocol == "disambiguation"
    assert debate_config("disambiguation-sync").protocol == "disambiguation_sync"


def test_retrieval_follows_the_paper() -> None:
    for name in PAPER + ["judged", "actor-skeptic"]:
        settings = debate_config(name).retrieval
        assert settings is not None, name
        assert settings.reverse_image and settings.first_available
        assert settings.max_pages == 3 and not settings.caption_search
        assert settings.summary.non_english == "exclude" and not settings.summary.condition_on_caption


async def test_rounds_get_an_independent_prompt_then_a_first_debate_prompt_then_the_standard_one() -> None:
    scripts = {"agent_a": [answer("fake", "A1"), answer("fake", "A2"), answer("fake", "A3")],
               "agent_b": [answer("real", "B1"), answer("real", "B2"), answer("real", "B3")]}
    config, pool, clients = seat_pool(debate_config("async"), scripts)
    verdict = await run_sample(config, SAMPLE, pool)
    assert verdict.abstained, "two debaters who end split tie: no majority"
    first, second, third = prompts_of(clients["agent_b"])
    assert "independent assessment" in first and "watermarks, flags" in first and "A1" not in first
    assert "known people and other recognisable entities" in " ".join(first.split())
    assert "the discussion starts" in second and "the discussion starts" not in third
    assert "Leave out any description of the image" in " ".join(second.split()), "paper line 198"
    assert "then this is what I think:" in second and "Do you agree with me?" in second
    assert "B1" in second and "Me, round 2:\nA2" in second, "its own first answer, then the other side's as the user's"
    assert "B2" in third and "A3" in third and "this is what I think now" in third
    for prompt in first, second, third:
        assert "agent_a" not in prompt, "seat names would give away that the other side is a model"
        assert "five sentences" not in prompt and "in detail" in prompt


def test_the_human_and_ai_framings_differ_only_in_who_the_other_party_is() -> None:
    human, ai = prompts.load("debate/framing_human"), prompts.load("debate/framing_ai")
    assert human.replace("a person", "another AI model") == ai
    from debates.debate_engine.visibility import SeatView
    from debates.strategies.debate.protocols.base import other_side

    for template in ("debate/turn_first_debate", "debate/turn_later"):
        rendered = {}
        for framing in ("human", "ai"):
            config = debate_config("async").model_copy(update={"framing": framing})
            words = other_side(SeatView(config.seat("agent_b"), config, None))  # type: ignore[arg-type]
            rendered[framing] = Template(prompts.load(template)).substitute(round=2, history="H", **words)
        swapped = (rendered["human"].replace("this is what I think", "this is what the other AI model thinks")
                   .replace("agree with me", "agree with it"))
        assert swapped == rendered["ai"], template


async def test_under_the_ai_framing_the_other_side_is_another_ai_model() -> None:
    scripts = {"agent_a": [answer("fake", "A1"), answer("fake", "A2")], "agent_b": [answer("real", "B1"), answer("fake", "B2")]}
    config, pool, clients = seat_pool(debate_config("async-ai"), scripts)
    await run_sample(config, SAMPLE, pool)
    second = prompts_of(clients["agent_a"])[1]
    assert "with another AI model" in second and "this is what the other AI model thinks:" in second
    assert "The other AI model, round 1:" in second and "agent_b" not in second


async def test_out_of_context_data_sets_say_the_image_is_authentic() -> None:
    loaded = [load_dataset(f"verite:{FIXTURES / 'VERITE/VERITE.csv'}").samples[0],
              load_dataset(f"newsclippings:{FIXTURES / 'newsclippings/merged_balanced/val.json'}",
                           {"visualnews": str(FIXTURES / "newsclippings/visual_news/origin/data.json")}).samples[0]]
    assert all(s.metadata.images_authentic for s in loaded)
    authentic = SAMPLE.model_copy(update={"metadata": SampleMetadata(images_authentic=True)})
    for sample, expected in ((authentic, True), (SAMPLE, False)):
        config, pool, clients = seat_pool(debate_config("async"), {n: [answer("fake")] for n in ("agent_a", "agent_b")})
        await run_sample(config, sample, pool)
        assert ("has not been digitally altered" in prompts_of(clients["agent_a"])[0]) is expected


async def test_disambiguation_takes_turns_and_the_desk_answers_before_the_next_speaker() -> None:
    class Answerer:
        async def answer(self, query: str, sample: Sample, ledger: Any = None) -> list[Evidence]:
            return [Evidence(kind="answer", text=f"ANSWER-TO[{query}]")]

    scripts = {"agent_a": [answer("real", "A1") + "\nQUERY: who took the photo", answer("fake", "A2")],
               "agent_b": [answer("fake", "B1"), answer("fake", "B2")]}
    config, pool, clients = seat_pool(debate_config("disambiguation"), scripts)
    verdict = await run_sample(config, SAMPLE, pool, query_answerer=Answerer())
    assert [t.speaker for t in verdict.transcript] == ["agent_a", "retrieval_desk", "agent_b", "agent_a"]
    assert "ANSWER-TO" not in prompts_of(clients["agent_b"])[0], "a first answer stays independent"
    assert "ANSWER-TO[who took the photo]" in prompts_of(clients["agent_a"])[1]
    assert verdict.diagnostics.consensus_round == 2 and verdict.label == "fake"
    for prompt in prompts_of(clients["agent_a"]) + prompts_of(clients["agent_b"]):
        assert "agent_a" not in prompt and "agent_b" not in prompt, "the desk's answers name no seat"
    assert verdict.transcript[1].text.startswith("QUERY: who took the photo\n")


async def test_json_turns_leave_room_for_detailed_arguments() -> None:
    long_argument = "Detail. " * 300

    def respond(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
        assert "in detail" in text_of(messages)
        return json.dumps({"argument": long_argument, "answer": "fake", "confidence": 0.7})

    json_turns = debate_config("async").model_copy(update={"structured_turns": True})  # our variants' JSON turns
    config, pool, _ = seat_pool(json_turns, {n: respond for n in ("agent_a", "agent_b")}, json_output=True)
    verdict = await run_sample(config, SAMPLE, pool)
    assert verdict.label == "fake" and verdict.transcript[0].text.startswith(long_argument.strip())


def test_every_llm_consensus_configuration_is_described_on_its_page() -> None:
    page = (REPO / "docs" / "systems" / "llm-consensus.md").read_text()
    named = [n for n in builtin_config_names() if load_config(n).paper == "LLM-Consensus"]
    assert set(PAPER + ["async-closed", "judged", "actor-skeptic", "async-three", "disambiguation-three"]) <= set(named)
    for name in named:
        assert f"`{name}`" in page, name
    assert (REPO / "docs" / "systems" / "agentm3d.md").read_text().count("`agentm3d-lazy`") >= 1
    assert "`mmd-agent-decoupled`" in (REPO / "docs" / "systems" / "agentm3d.md").read_text()
