"""The cascade run end to end with scripted agents: eq. 9 for every combination, label mapping, seat validation."""

from __future__ import annotations

import itertools

import pytest

from debates.debate_engine.config import TURN_POLICY_SETTINGS, DebateConfig
from debates.config_loader import load_config
from debates.session import run_sample
from debates.strategies.debate.protocols.cascade import cascade_label, distortion_label, parse_modality_action
from m3d_agents.errors import InputError, ParseError
from m3d_agents.labels import collapse_label, get_taxonomy
from tests.support.debate import seat_pool
from tests.support.cascade import M3D_SAMPLE, finish


# --- cascade gating: the full truth table of eq. 9 -------------------------------------------

TRUTH_TABLE = [
    (text, image, cross)
    for text, image, cross in itertools.product(("TEXT REFUTE", "TEXT SUPPORT"), ("IMAGE REFUTE", "IMAGE SUPPORT"), ("MISMATCH", "MATCH"))
]


def expected_cascade(text: str, image: str, cross: str) -> tuple[str, list[str]]:
    if text == "TEXT REFUTE":
        return "textual_veracity_distortion", ["text_agent"]
    if image == "IMAGE REFUTE":
        return "visual_veracity_distortion", ["text_agent", "image_agent"]
    if cross == "MISMATCH":
        return "cross_modal_consistency_distortion", ["text_agent", "image_agent", "cross_modal_agent"]
    return "original", ["text_agent", "image_agent", "cross_modal_agent"]


@pytest.mark.parametrize("text,image,cross", TRUTH_TABLE)
async def test_cascade_follows_eq9_for_every_combination(text: str, image: str, cross: str) -> None:
    scripts = {"text_agent": [finish(text)], "image_agent": [finish(image)], "cross_modal_agent": [finish(cross)]}
    config, pool, clients = seat_pool(load_config("mmd-agent-decoupled"), scripts)
    verdict = await run_sample(config, M3D_SAMPLE, pool)
    label, speakers = expected_cascade(text, image, cross)
    assert [t.speaker for t in verdict.transcript] == speakers
    assert verdict.label == label and verdict.diagnostics.decided_by == "cascade"
    assert {name: len(c.calls) for name, c in clients.items()} == {
        name: int(name in speakers) for name in ("text_agent", "image_agent", "cross_modal_agent")
    }, "an agent speaks only if every agent before it found no distortion"
    assert [f.modality for f in verdict.findings] == [s.removesuffix("_agent") for s in speakers]
    assert verdict.findings[-1].distortion is (label != "original")


def test_cascade_label_is_eq9_and_unknown_when_an_answer_is_unreadable() -> None:
    for text, image, cross in TRUTH_TABLE:
        assert cascade_label({"text": text, "image": image, "cross_modal": cross}) == expected_cascade(text, image, cross)[0]
    assert cascade_label({"text": "TEXT SUPPORT", "image": None}) is None
    assert cascade_label({"text": "TEXT REFUTE", "image": None}) == "textual_veracity_distortion"
    assert cascade_label({"text": "TEXT SUPPORT"}) == "original", "a cascade without image seats ends clear"


async def test_unreadable_modality_answer_is_retried_then_ends_the_cascade_as_an_abstention() -> None:
    scripts = {"text_agent": [finish("TEXT SUPPORT")], "image_agent": ["Finish[MATCH]", "no idea", "still none"]}
    config, pool, clients = seat_pool(load_config("mmd-agent-decoupled"), scripts)
    verdict = await run_sample(config, M3D_SAMPLE, pool)
    assert len(clients["image_agent"].calls) == 3 and not clients["cross_modal_agent"].calls
    assert verdict.abstained and "image veracity answer could not be read" in (verdict.abstain_reason or "")
    assert "must answer Finish[IMAGE REFUTE] or Finish[IMAGE SUPPORT], not Finish[MATCH]" in clients["image_agent"].calls[1].prompt


# --- label mapping ---------------------------------------------------------------------------------


def test_modality_actions_map_onto_the_m3d_taxonomy() -> None:
    assert distortion_label("text", "TEXT REFUTE") == "textual_veracity_distortion"
    assert distortion_label("image", "IMAGE REFUTE") == "visual_veracity_distortion"
    assert distortion_label("cross_modal", "MISMATCH") == "cross_modal_consistency_distortion"
    assert [distortion_label(r, a) for r, a in (("text", "TEXT SUPPORT"), ("image", "IMAGE SUPPORT"), ("cross_modal", "MATCH"))] == [None] * 3
    assert parse_modality_action("thinking... Finish[ text  refute ]", "text") == "TEXT REFUTE"
    with pytest.raises(ParseError, match="not Finish\\[MATCH\\]"):
        parse_modality_action("Finish[MATCH]", "text")


def test_m3d_labels_collapse_onto_two_label_taxonomies_only() -> None:
    m3d, binary, ooc = get_taxonomy("m3d"), get_taxonomy("binary"), get_taxonomy("ooc")
    assert collapse_label("original", m3d, binary) == "real"
    for label in ("textual_veracity_distortion", "visual_veracity_distortion", "cross_modal_consistency_distortion"):
        assert collapse_label(label, m3d, binary) == "fake"
        assert collapse_label(label, m3d, ooc) == "falsified"
    assert collapse_label("original", m3d, m3d) == "original"
    with pytest.raises(ValueError, match="cannot be carried over to 'factcheck'"):
        collapse_label("original", m3d, get_taxonomy("factcheck"))


async def test_a_binary_sample_gets_the_collapsed_label_and_keeps_the_m3d_answer() -> None:
    scripts = {"text_agent": [finish("TEXT SUPPORT")], "image_agent": [finish("IMAGE REFUTE", confidence=0.7)]}
    config, pool, _ = seat_pool(load_config("mmd-agent-decoupled"), scripts)
    verdict = await run_sample(config, M3D_SAMPLE.model_copy(update={"taxonomy": "binary"}), pool)
    assert verdict.label == "fake" and verdict.taxonomy == "binary" and verdict.confidence == 0.7
    assert verdict.diagnostics.answer.model_dump() == {"taxonomy": "m3d", "label": "visual_veracity_distortion"}
    with pytest.raises(InputError, match="answers in m3d"):
        await run_sample(config, M3D_SAMPLE.model_copy(update={"taxonomy": "factcheck"}), pool)


def test_config_validation_of_cascade_seats() -> None:
    base = load_config("mmd-agent-decoupled").model_dump()
    base["seats"] = list(reversed(base["seats"]))
    assert [s.role for s in DebateConfig.model_validate(base).seats] == ["cross_modal", "image", "text"]
    base["seats"][0]["role"] = "text"
    with pytest.raises(ValueError, match="one seat at most"):
        DebateConfig.model_validate(base)
    mixed = load_config("async-three").model_dump()
    mixed["seats"][0]["role"] = "text"
    with pytest.raises(ValueError, match="belong to the cascade"):
        DebateConfig.model_validate(mixed)
    with pytest.raises(ValueError, match="needs reward.model"):
        TURN_POLICY_SETTINGS.validate_python({"kind": "best_of_n", "reward": {"kind": "sequence_classifier"}})
