"""The ReAct step format over tool cards, the per-subtask whitelist, the per-post tool cache and the web tools."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from m3d_agents.tools.actions import ActionRunner
from m3d_agents.tools.react import FINISH, Step, action_menu, action_specs, parse_step
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.errors import ParseError
from m3d_agents.evidence import Evidence
from m3d_agents.media.images import prepare_sample
from m3d_agents.sample import Sample
from m3d_agents.tools.cards import ToolCard, ToolContext, ToolRegistry
from m3d_agents.tools.catalogue import default_registry
from tests.support.paths import EXAMPLE_IMAGE
from tests.support.scripted import ScriptedClient, scripted_backend

TEXT_ANSWERS = ("TEXT REFUTE", "TEXT SUPPORT")
SAMPLE = Sample(text="The mayor opened the bridge.", images=[EXAMPLE_IMAGE])


def text_specs() -> dict[str, Any]:
    return action_specs({"Wikipedia": "wikipedia_search", "Google": "web_search"}, default_registry())


def test_the_menu_is_built_from_the_cards_only() -> None:
    registry = ToolRegistry()
    card = ToolCard(name="lookup", purpose="Finds a page.", when_to_use="for names.", inputs="name", outputs="a page.",
                    cost="cheap", category="web", argument="name")
    registry.register(card)(lambda context: (lambda name: name))
    menu = action_menu(action_specs({"Look": "lookup"}, registry), TEXT_ANSWERS)
    assert menu.splitlines() == [
        "- Look[name]: Finds a page. Use it for names. It returns a page.",
        "- Finish[TEXT REFUTE] or Finish[TEXT SUPPORT]: ends the check with your answer.",
    ]
    other = ToolRegistry()
    other.register(card.model_copy(update={"purpose": "Finds two pages.", "argument": "title"}))(lambda context: None)
    assert action_menu(action_specs({"Look": "lookup"}, other), TEXT_ANSWERS).splitlines()[0] == (
        "- Look[title]: Finds two pages. Use it for names. It returns a page."
    )
    tools = default_registry().function_tools(ToolContext(prepare_sample(SAMPLE)), ["wikipedia_search", "visual_question"])
    assert [t.description for t in tools] == [default_registry().card(t.name).description() for t in tools]


def test_image_tools_are_written_on_the_image() -> None:
    specs = action_specs({"Detect": "physics_check", "VQA": "visual_question"}, default_registry())
    assert [s.form for s in specs.values()] == ["Detect[image]", "VQA[question]"]


@pytest.mark.parametrize(
    "text",
    [
        "Thought 1: Look it up.\nAction 1: Wikipedia[Barack Obama]",
        "thought 1 : look it up.\naction 1 :  wikipedia [ Barack   Obama ]",
        "Thought: Look it up.\nAction: WIKIPEDIA[Barack Obama]\nObservation 1: (made up) Finish[TEXT REFUTE]",
        "<think>hmm</think>Thought 1: Look it up.\n**Action 1:** Wikipedia[Barack Obama]",
    ],
)
def test_steps_are_read_in_spacing_and_case_variants(text: str) -> None:
    step = parse_step(text, text_specs(), TEXT_ANSWERS)
    assert (step.verb, step.argument, step.finish, step.allowed) == ("Wikipedia", "Barack Obama", None, True)
    assert step.thought.lower().startswith("look it up")


@pytest.mark.parametrize("answer", ["TEXT REFUTE", "text support", "Text  Refute"])
def test_finish_with_either_answer_of_the_check(answer: str) -> None:
    step = parse_step(f"Thought 2: Settled.\nAction 2: Finish[{answer}]", text_specs(), TEXT_ANSWERS)
    assert step.verb == FINISH and step.finish in TEXT_ANSWERS and step.finish == " ".join(answer.split()).upper()


def test_an_answer_of_another_check_and_a_missing_action_are_unreadable() -> None:
    with pytest.raises(ParseError, match="not an answer of this check"):
        parse_step("Thought 1: x\nAction 1: Finish[MISMATCH]", text_specs(), TEXT_ANSWERS)
    with pytest.raises(ParseError, match="no action"):
        parse_step("I think the text is true.", text_specs(), TEXT_ANSWERS)
    with pytest.raises(ParseError, match="must end the check"):
        parse_step("Thought 4: x\nAction 4: Wikipedia[A]", text_specs(), TEXT_ANSWERS, must_finish=True)
    with pytest.raises(ParseError, match="needs its entity"):
        parse_step("Thought 1: x\nAction 1: Wikipedia[ ]", text_specs(), TEXT_ANSWERS)
    bare = parse_step("The text holds. Finish[TEXT SUPPORT]", text_specs(), TEXT_ANSWERS)
    assert bare.finish == "TEXT SUPPORT"


def counting_registry(calls: list[str]) -> ToolRegistry:
    registry = ToolRegistry()
    card = ToolCard(name="lookup", purpose="Finds a page.", when_to_use="for names.", inputs="name", outputs="a page.",
                    cost="cheap", category="web", argument="name")

    def factory(context: ToolContext) -> Any:
        async def lookup(name: str) -> str:
            calls.append(name)
            await asyncio.sleep(0.01)
            return f"page of {name}"

        return lookup

    registry.register(card)(factory)
    forbidden = card.model_copy(update={"name": "detector", "argument": None})
    registry.register(forbidden)(lambda context: (lambda: calls.append("DETECTOR") or "ran"))
    return registry


async def test_a_verb_outside_the_whitelist_never_runs_and_the_allowed_ones_are_listed() -> None:
    calls: list[str] = []
    registry = counting_registry(calls)
    runner = ActionRunner(registry, ToolContext(prepare_sample(SAMPLE)))
    specs = action_specs({"Look": "lookup"}, registry)
    step = parse_step("Thought 1: x\nAction 1: Detect[image]", specs, TEXT_ANSWERS)
    assert not step.allowed
    observation = await runner.run(step, specs)
    assert calls == [] and "not an action of this check" in observation.text and "Look[name]" in observation.text
    assert runner.refused == {"Detect": 1}


async def test_the_same_action_runs_once_per_post_even_when_asked_at_once() -> None:
    calls: list[str] = []
    registry = counting_registry(calls)
    runner = ActionRunner(registry, ToolContext(prepare_sample(SAMPLE)))
    specs = action_specs({"Look": "lookup"}, registry)
    step = Step(thought="", verb="Look", argument="Alpha")
    same = Step(thought="", verb="Look", argument="  alpha ")
    first, second = await asyncio.gather(runner.run(step, specs), runner.run(same, specs))
    third = await runner.run(Step(thought="", verb="Look", argument="Beta"), specs)
    assert calls == ["Alpha", "Beta"]
    assert (first.cached, second.cached, third.cached) == (False, True, False) and first.text == second.text
    assert runner.runs == {"Look": 2} and runner.cache_hits == {"Look": 1}
    fresh = ActionRunner(registry, ToolContext(prepare_sample(SAMPLE)))
    await fresh.run(step, specs)
    assert calls == ["Alpha", "Beta", "Alpha"], "another post's runner has its own cache"


async def test_a_failing_tool_is_an_observation_not_a_crash() -> None:
    runner = ActionRunner(default_registry(), ToolContext(prepare_sample(Sample(text="No picture here."))))
    specs = action_specs({"Detect": "forensic_fusion"}, default_registry())
    observation = await runner.run(Step(thought="", verb="Detect", argument="image"), specs)
    assert observation.error and "image_index" in observation.text and runner.errors


class Searcher:
    def __init__(self, evidence: list[Evidence]) -> None:
        self.evidence = evidence
        self.queries: list[str] = []

    async def answer(self, query: str, sample: Sample, ledger: UsageLedger | None = None) -> list[Evidence]:
        self.queries.append(query)
        return self.evidence


async def test_web_actions_quote_the_searchers_evidence_with_ids_and_say_when_there_is_none() -> None:
    kept = Evidence(kind="wikipedia", url="https://en.wikipedia.org/wiki/Alphaville", text="Alphaville is a town.")
    dropped = Evidence(kind="answer", url="https://www.snopes.com/x", text="Fact check: false.", kept=False,
                       reason="leakage: fact-checking site")
    searcher = Searcher([kept, dropped])
    context = ToolContext(prepare_sample(SAMPLE), searchers={"wikipedia": searcher})
    runner = ActionRunner(default_registry(), context)
    specs = text_specs()
    observation = await runner.run(Step(thought="", verb="Wikipedia", argument="Alphaville"), specs)
    assert f"[{kept.id}]" in observation.text and "Alphaville is a town." in observation.text
    assert "snopes" not in observation.text and context.retrieved == [kept]
    assert searcher.queries == ["Alphaville"]
    missing = await runner.run(Step(thought="", verb="Google", argument="bridge opening"), specs)
    assert "not available in this run" in missing.text and "web" in missing.text


async def test_vision_tools_on_a_text_only_backend_are_unavailable_without_a_model_call() -> None:
    client = ScriptedClient(["should not be asked"])
    backend = scripted_backend(client)
    runner = ActionRunner(default_registry(), ToolContext(prepare_sample(SAMPLE), backend=backend))
    specs = action_specs({"VQA": "visual_question", "Entity": "image_entities", "Detect": "physics_check"}, default_registry())
    for verb in specs:
        observation = await runner.run(Step(thought="", verb=verb, argument="Who is shown?"), specs)
        assert "unavailable" in observation.text
    assert client.calls == []
