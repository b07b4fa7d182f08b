"""MMD-Agent as AgentM3D compares against it (paper line 72): one model, a fixed chain of prompts,
each step carrying the earlier steps' reasoning; against AgentM3D's decoupled agents."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pytest
from autogen_core import Image as AgentImage
from autogen_core.models import LLMMessage

from debates.debate_engine.config import DebateConfig
from debates.config_loader import load_config
from debates.session import run_sample
from m3d_agents.backends.factory import BackendPool
from debates.debate_engine.diagnostics import DebateDiagnostics
from m3d_agents.evidence import Evidence
from m3d_agents.sample import Sample
from tests.support.paths import EXAMPLE_IMAGE
from tests.support.scripted import RecordedCall, ScriptedClient, scripted_backend, text_of

CAPTION = "CAPTION-TEXT storm clouds over the Statue of Liberty during Hurricane Sandy"
SAMPLE = Sample(text=CAPTION, images=[EXAMPLE_IMAGE], taxonomy="m3d")
WIKI = Evidence(kind="wikipedia", url="https://en.wikipedia.org/wiki/Hurricane_Sandy", text="WIKI-EVIDENCE Sandy hit New York")
STEPS = {"Step 1 of 3": ("TEXT-REASONING the storm and the date agree with the article", "TEXT SUPPORT"),
         "Step 2 of 3": ("IMAGE-REASONING the clouds look composited", "IMAGE SUPPORT"),
         "Step 3 of 3": ("CROSS-REASONING the statue is in the caption and the picture", "MATCH")}


def chain_script(actions: Mapping[str, str] | None = None) -> Any:
    def respond(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
        last = text_of(messages[-1:])
        if "strict grader" in last:
            return "SCORE: 0.5"
        for step, (reasoning, action) in STEPS.items():
            if step in last:
                seed = int(kwargs.get("seed", 0) or 0)
                return f"{reasoning} (candidate {seed}).\nFinish[{(actions or {}).get(step, action)}]\nCONFIDENCE: 0.8"
        raise AssertionError(f"unexpected call: {text_of(messages)[:160]}")

    return respond


def one_model(name: str, client: ScriptedClient) -> tuple[DebateConfig, BackendPool]:
    config = load_config(name)
    assert isinstance(config, DebateConfig)
    pool = BackendPool()
    pool.add(scripted_backend(client, name="vlm"))
    return config, pool


def step_calls(client: ScriptedClient, step: str) -> list[RecordedCall]:
    return [c for c in client.calls if step in text_of(c.messages[-1:])]


def has_image(call: RecordedCall) -> bool:
    return any(isinstance(part, AgentImage) for m in call.messages for part in (m.content if isinstance(m.content, list) else []))


async def test_the_chained_mmd_agent_passes_the_text_steps_reasoning_to_the_image_step() -> None:
    client = ScriptedClient(chain_script(), vision=True)
    config, pool = one_model("mmd-agent", client)
    verdict = await run_sample(config, SAMPLE, pool, backend="vlm", evidence=[WIKI])
    assert verdict.label == "original" and verdict.diagnostics.answer.label == "original"
    [text], [image], [cross] = (step_calls(client, step) for step in STEPS)
    assert "REASONING" not in text.prompt, "the first step has no earlier step"
    assert "TEXT-REASONING the storm and the date agree with the article" in image.prompt
    assert "Finish[TEXT SUPPORT]" in image.prompt
    assert "TEXT-REASONING" in cross.prompt and "IMAGE-REASONING the clouds look composited" in cross.prompt
    for call in (text, image, cross):
        assert CAPTION in call.prompt and "WIKI-EVIDENCE" in call.prompt and has_image(call), "one model reads the whole post"
        assert text_of(call.messages[:1]) == text_of(text.messages[:1]), "every step shares one system prompt"
    assert len(client.calls) == 3, "no image description: the model looks at the image itself"
    assert isinstance(verdict.diagnostics, DebateDiagnostics) and verdict.diagnostics.image_descriptions == []


async def test_the_first_distortion_ends_the_chain() -> None:
    client = ScriptedClient(chain_script({"Step 1 of 3": "TEXT REFUTE"}), vision=True)
    config, pool = one_model("mmd-agent", client)
    verdict = await run_sample(config, SAMPLE, pool, backend="vlm", evidence=[WIKI])
    assert verdict.diagnostics.answer.label == "textual_veracity_distortion"
    assert len(client.calls) == 1 and not step_calls(client, "Step 2 of 3")


async def test_mmd_agent_bon_carries_the_kept_candidate_into_the_next_step() -> None:
    client = ScriptedClient(chain_script(), vision=True)
    config, pool = one_model("mmd-agent-bon", client)
    verdict = await run_sample(config, SAMPLE, pool, backend="vlm", evidence=[WIKI])
    assert verdict.label == "original"
    kept = verdict.transcript[0].text
    image_candidates = step_calls(client, "Step 2 of 3")
    assert len(image_candidates) == 5
    assert all(kept.strip() in c.prompt for c in image_candidates), "the chosen text answer is what the image step reads"
    assert verdict.diagnostics.selection.planner is None


async def test_the_decoupled_cascade_keeps_the_stages_apart() -> None:
    """The same post through mmd-agent-decoupled: the image agent reads neither the caption nor the text agent's answer."""
    def respond(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
        system = text_of(messages[:1])
        if "Describe the attached image" in text_of(messages):
            return "A statue under clouds."
        for marker, (reasoning, action) in zip(("its TEXT is true", "its IMAGE is genuine", "belong together"), STEPS.values()):
            if marker in system:
                return f"{reasoning}\nFinish[{action}]\nCONFIDENCE: 0.8"
        raise AssertionError(system[:100])

    client = ScriptedClient(respond, vision=True)
    config, pool = one_model("mmd-agent-decoupled", client)
    await run_sample(config, SAMPLE, pool, backend="vlm", evidence=[WIKI])
    image = next(c for c in client.calls if "its IMAGE is genuine" in text_of(c.messages[:1]))
    assert "TEXT-REASONING" not in image.prompt and CAPTION not in image.prompt


class WikiSearcher:
    """A Wikipedia searcher on loopback terms: it records the queries and answers one article."""

    def __init__(self) -> None:
        self.queries: list[str] = []

    async def answer(self, query: str, sample: Sample, ledger: Any = None) -> list[Evidence]:
        self.queries.append(query)
        return [Evidence(kind="wikipedia", url="https://en.wikipedia.org/wiki/Sandy", text=f"WIKI-LOOKUP {query}")]


ORDERED = {"whether its TEXT is true": ("TEXT-REASONING", "TEXT SUPPORT"),
           "whether its IMAGE is genuine": ("IMAGE-REASONING", "IMAGE SUPPORT"),
           "belong together": ("CROSS-REASONING", "MATCH")}


async def test_the_chain_runs_in_the_configured_order_with_its_wikipedia_step_last() -> None:
    """T2Agent's Table 6 (paper line 274): the same chain in another order, the text step still looking claims up."""
    def respond(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
        last = text_of(messages[-1:])
        for marker, (reasoning, action) in ORDERED.items():
            if marker in last:
                if "Work on this in steps" in last and "WIKI-LOOKUP" not in last:
                    return "Thought 1: I should look the storm up.\nAction 1: Wikipedia[Hurricane Sandy]"
                return f"{reasoning} done.\nFinish[{action}]\nCONFIDENCE: 0.8"
        raise AssertionError(last[:200])

    client = ScriptedClient(respond, vision=True)
    config, pool = one_model("mmd-agent-image-match-text", client)
    assert config.protocol == "chained_cascade" and config.retrieval is not None
    wiki = WikiSearcher()
    verdict = await run_sample(config, SAMPLE, pool, backend="vlm", searchers={"wikipedia": wiki})
    assert verdict.label == "original"
    firsts = [text_of(c.messages[-1:]) for c in client.calls]
    assert "Step 1 of 3: whether its IMAGE is genuine" in firsts[0]
    assert "Step 2 of 3: whether the image and its text belong together" in firsts[1]
    assert all("Step 3 of 3: whether its TEXT is true" in f for f in firsts[2:]) and len(firsts) == 4
    system = text_of(client.calls[0].messages[:1])
    assert system.index("1. the picture") < system.index("2. the pair") < system.index("3. the caption"), system
    assert wiki.queries == ["Hurricane Sandy"]
    last = client.calls[-1].prompt
    assert "IMAGE-REASONING" in last and "CROSS-REASONING" in last and "WIKI-LOOKUP Hurricane Sandy" in last
    assert all(has_image(c) for c in client.calls), "every step of the one model sees the image"


async def test_the_order_decides_which_distortion_ends_the_chain() -> None:
    """A post distorted in both the match and the text: the order's first check names it."""
    def respond(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
        last = text_of(messages[-1:])
        if "whether its TEXT is true" in last:
            return "Thought 1: the claim is false.\nAction 1: Finish[TEXT REFUTE]" if "Work on this" in last else \
                "False.\nFinish[TEXT REFUTE]\nCONFIDENCE: 0.9"
        if "belong together" in last:
            return "They differ.\nFinish[MISMATCH]\nCONFIDENCE: 0.9"
        return "Genuine.\nFinish[IMAGE SUPPORT]\nCONFIDENCE: 0.9"

    labels = {}
    for name in ("mmd-agent-wikipedia", "mmd-agent-match-text-image"):
        config, pool = one_model(name, ScriptedClient(respond, vision=True))
        labels[name] = (await run_sample(config, SAMPLE, pool, backend="vlm", searchers={"wikipedia": WikiSearcher()})).label
    assert labels == {"mmd-agent-wikipedia": "textual_veracity_distortion",
                      "mmd-agent-match-text-image": "cross_modal_consistency_distortion"}


AMG_SAMPLE = Sample(text="Crowds greet the president in Paris on Bastille Day 2023", images=[EXAMPLE_IMAGE], taxonomy="amg")
AMG_STEPS = {"authentic photograph": "IMAGE AUTHENTIC", "evidence for what the text reports": "EVIDENCE",
             "people, places and organisations": "ENTITY MATCH", "the event the text describes": "EVENT MATCH",
             "from the time the text says": "TIME MATCH"}


def amg_script(flagged: Mapping[str, str]) -> Any:
    def respond(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
        last = text_of(messages[-1:])
        for marker, clear in AMG_STEPS.items():
            if marker in last:
                if "Work on this in steps" in last and "WIKI-LOOKUP" not in last:
                    return "Thought 1: who is that?\nAction 1: Wikipedia[President of France]"
                return f"Reasoned.\nFinish[{flagged.get(marker, clear)}]\nCONFIDENCE: 0.7"
        raise AssertionError(last[:200])

    return respond


async def test_mmd_agent_on_amg_chains_the_five_forgery_types_and_answers_in_amg() -> None:
    """T2Agent's Table 2: MMD-Agent on AMG, one step per forgery type; a post that passes them all is real."""
    client = ScriptedClient(amg_script({}), vision=True)
    config, pool = one_model("mmd-agent-amg", client)
    wiki = WikiSearcher()
    verdict = await run_sample(config, AMG_SAMPLE, pool, backend="vlm", searchers={"wikipedia": wiki})
    assert verdict.label == "real" and verdict.is_misinformation is False
    assert wiki.queries == ["President of France"], "the entity step looks the name up"
    assert [f.subtask for f in verdict.findings] == [s.role for s in config.seats]
    client = ScriptedClient(amg_script({"the event the text describes": "EVENT MISMATCH"}), vision=True)
    config, pool = one_model("mmd-agent-amg", client)
    verdict = await run_sample(config, AMG_SAMPLE, pool, backend="vlm", searchers={"wikipedia": WikiSearcher()})
    assert verdict.label == "event_inconsistency" and verdict.is_misinformation
    assert not any("from the time the text says" in text_of(c.messages[-1:]) for c in client.calls), "the chain ended"


def test_a_chain_takes_its_checks_from_one_label_set_and_the_decoupled_cascade_only_mmfakebenchs() -> None:
    data = load_config("mmd-agent").model_dump()
    data["seats"] = list(reversed(data["seats"]))
    assert [s.role for s in DebateConfig.model_validate(data).seats] == ["cross_modal", "image", "text"]
    data["seats"][0] = {"name": "time_agent", "role": "time_inconsistency"}
    with pytest.raises(ValueError, match="come from one label set"):
        DebateConfig.model_validate(data)
    amg = load_config("mmd-agent-amg").model_dump()
    amg["protocol"] = "cascade"
    with pytest.raises(ValueError, match="belong to the chained_cascade protocol"):
        DebateConfig.model_validate(amg)
