"""MMD-Agent as AgentM3D compares against it (paper line 72): one model, a fixed chain of prompts,
each step carrying the earlier steps' reasoning; against AgentM3D's decoupled agents."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pytest
from autogen_core import Image as AgentImage
from autogen_core.models import LLMMessage

from debates.chat.config import DebateConfig
from debates.config_loader import load_config
from debates.session import run_sample
from m3d_agents.backends.factory import BackendPool
from debates.chat.diagnostics import DebateDiagnostics
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


def test_a_chain_out_of_order_is_refused() -> None:
    data = load_config("mmd-agent").model_dump()
    data["seats"] = list(reversed(data["seats"]))
    with pytest.raises(ValueError, match="runs its steps in the order text, image, cross_modal"):
        DebateConfig.model_validate(data)
