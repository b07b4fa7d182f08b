"""The selector: cascade gating (eq. 9), label mapping, best-of-N scoring and early stop, the planner."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from debates.config import DebateConfig, TurnPolicyConfig
from debates.strategy import load_config
from debates.strategies.debate import run_debate
from debates.protocols.cascade import cascade_label, distortion_label, parse_modality_action
from debates.turns.scoring import CandidateScore, best_index, early_stop_m, gap_exceeds, logistic, unit_from_ten_point
from m3d_agents.errors import InputError, ParseError
from m3d_agents.labels import collapse_label, get_taxonomy
from m3d_agents.sample import Sample
from tests.support.paths import EXAMPLE_IMAGE
from tests.support.selector_script import SelectorScript
from tests.support.debate import seat_pool

M3D_SAMPLE = Sample(text="Storm clouds over the Statue of Liberty during Hurricane Sandy", images=[EXAMPLE_IMAGE], taxonomy="m3d")


def finish(action: str, marker: str = "", confidence: float = 0.8) -> str:
    return f"{marker} I checked my part of the post.\nFinish[{action}]\nCONFIDENCE: {confidence}"


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
    config, pool, clients = seat_pool(load_config("mmd-agent"), scripts)
    verdict = await run_debate(config, M3D_SAMPLE, pool)
    label, speakers = expected_cascade(text, image, cross)
    assert [t.speaker for t in verdict.transcript] == speakers
    assert verdict.label == label and verdict.diagnostics["decided_by"] == "cascade"
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
    config, pool, clients = seat_pool(load_config("mmd-agent"), scripts)
    verdict = await run_debate(config, M3D_SAMPLE, pool)
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
    config, pool, _ = seat_pool(load_config("mmd-agent"), scripts)
    verdict = await run_debate(config, M3D_SAMPLE.model_copy(update={"taxonomy": "binary"}), pool)
    assert verdict.label == "fake" and verdict.taxonomy == "binary" and verdict.confidence == 0.7
    assert verdict.diagnostics["answer"] == {"taxonomy": "m3d", "label": "visual_veracity_distortion"}
    with pytest.raises(InputError, match="answers in m3d"):
        await run_debate(config, M3D_SAMPLE.model_copy(update={"taxonomy": "factcheck"}), pool)


def test_config_validation_of_cascade_seats() -> None:
    base = load_config("mmd-agent").model_dump()
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
        TurnPolicyConfig.model_validate({"kind": "best_of_n", "reward": {"kind": "sequence_classifier"}})


# --- early stop and normalisation ------------------------------------------------------------------


@pytest.mark.parametrize(
    "scores,m_star,best",
    [
        ([0.3], 1, 0),  # N = 1: nothing to compare
        ([0.9, 0.1], 2, 0),  # N = 2, gap 0.8 > 0.5
        ([0.5, 0.4], 2, 0),  # N = 2, no gap: m = N
        ([0.7] * 5, 5, 0),  # all equal: the gap is 0, m = N, the earliest wins
        ([1.0, 1.0, 0.2, 0.1, 0.0], 4, 0),  # a tie at the top: gaps 0, 0.4, then 1 - 1.3/3 = 0.567
        ([0.2, 1.6, 0.9, 0.0, 0.0], 2, 1),  # the later candidate wins at once: 1.4 > 0.5
        ([1.0, 0.75, 0.5, 0.25, 0.0], 5, 0),  # gap exactly 0.5 at m = 4 does not exceed tau; 0.625 at m = 5
        ([0.1, 0.2, 1.5, 0.0], 3, 2),  # sorted prefix [1.5, 0.2, 0.1]: 1.5 - 0.15 = 1.35
    ],
)
def test_early_stop_rule_on_hand_computed_vectors(scores: list[float], m_star: int, best: int) -> None:
    assert early_stop_m(scores, tau=0.5) == m_star
    assert best_index(scores[:m_star]) == best


def test_gap_and_best_index_edges() -> None:
    assert not gap_exceeds([], 0.5) and not gap_exceeds([2.0], 0.5)
    assert gap_exceeds([0.0, 0.6], 0.5) and not gap_exceeds([0.0, 0.5], 0.5)
    assert best_index([None, 0.4, 0.4]) == 1 and best_index([None, None]) is None


def test_rewards_and_critiques_share_one_scale() -> None:
    assert unit_from_ten_point(1) == 0.0 and unit_from_ten_point(10) == 1.0 and unit_from_ten_point(5.5) == 0.5
    with pytest.raises(ValueError):
        unit_from_ten_point(0)
    assert logistic(0.0) == 0.5 and logistic(40) == pytest.approx(1.0) and logistic(-800) == 0.0
    assert CandidateScore(0, reward=0.25, critique=0.5, critiqued=True).total == 0.75
    assert CandidateScore(0, reward=0.25).total == 0.25
    assert CandidateScore(0, reward=0.25, critiqued=True).total is None, "a missing critique is not a zero"


# --- best-of-N turns ------------------------------------------------------------------------------


def bon_config(name: str, **policy: object) -> DebateConfig:
    config = load_config(name)
    for seat in config.seats:
        seat.turn_policy = TurnPolicyConfig.model_validate({**seat.turn_policy.model_dump(), **policy})
    return config


def by_candidate(values: dict[int, float]) -> object:
    return lambda candidate_text: f"SCORE: {next(v for k, v in values.items() if f'CAND-{k}' in candidate_text)}"


async def test_lazy_scoring_stops_at_m_star_and_reports_saved_calls() -> None:
    script = SelectorScript(
        answers={"text": lambda i: finish("TEXT REFUTE", f"CAND-{i}")},
        reward=by_candidate({0: 0.9, 1: 0.1, 2: 1.0, 3: 1.0, 4: 1.0}),
        critique=lambda prompt: "Sound. The score is 10" if "CAND-0" in prompt else "Weak. The score is 1",
    )
    config = bon_config("mmd-agent-bon", critique=True, critic_format="prose", early_stop=True, scoring="lazy", tau=0.5)
    config, pool, clients = seat_pool(config, {"text_agent": script})
    verdict = await run_debate(config, M3D_SAMPLE, pool)
    assert verdict.label == "textual_veracity_distortion" and "CAND-0" in verdict.transcript[0].text
    turn = verdict.diagnostics["selection"]["best_of_n_turns"][0]
    assert turn["m_star"] == 2 and turn["chosen"] == 0 and turn["critic"] == "text_critic"
    assert [s["s"] for s in turn["scores"]] == [pytest.approx(1.9), pytest.approx(0.1)]
    assert turn["saved_calls"] == {"reward": 3, "critique": 3}
    roles = verdict.accounting.by_role
    assert roles["candidate"].calls == 5 and roles["reward"].calls == 2
    assert roles["critique"].calls == 3, "two critiques plus one logic check for the sample"
    assert verdict.diagnostics["selection"]["escalated"] is True
    assert verdict.accounting.by_agent.keys() >= {"text_agent", "turns/reward_judge", "text_critic", "logic_check"}
    logic_prompts = [c.prompt for c in clients["text_agent"].calls if "logic-consistency check of the post" in c.prompt]
    assert len(logic_prompts) == 2 and all("internally consistent" in p for p in logic_prompts)


async def test_uniform_best_of_n_scores_every_candidate_and_cross_modal_uses_the_reward_only() -> None:
    script = SelectorScript(
        answers={"text": lambda i: finish("TEXT SUPPORT", f"CAND-{i}"), "image": lambda i: finish("IMAGE SUPPORT", f"CAND-{i}"),
                 "cross_modal": lambda i: finish("MISMATCH" if i == 3 else "MATCH", f"CAND-{i}")},
        reward=by_candidate({0: 0.2, 1: 0.2, 2: 0.2, 3: 0.9, 4: 0.2}),
    )
    config = bon_config("agentm3d-lazy", kind="best_of_n", skip_unanimous=False)
    config, pool, clients = seat_pool(config, {"text_agent": script, "image_agent": script, "cross_modal_agent": script})
    verdict = await run_debate(config, M3D_SAMPLE, pool)
    turns = verdict.diagnostics["selection"]["best_of_n_turns"]
    assert [t["critic"] for t in turns] == ["text_critic", "image_critic", None]
    assert verdict.label == "cross_modal_consistency_distortion" and turns[2]["chosen"] == 3
    assert turns[2]["scores"][-1]["s"] == pytest.approx(0.9) and turns[2]["m_star"] == 4
    image_critique = next(c.prompt for c in clients["image_agent"].calls if "What the forgery tool reports" in c.prompt)
    assert "fused forgery score" in image_critique, "the image critic is given the real forensic report"

    uniform, pool, _ = seat_pool(load_config("mmd-agent-bon"), {"text_agent": script, "image_agent": script, "cross_modal_agent": script})
    verdict = await run_debate(uniform, M3D_SAMPLE, pool)
    assert [t["m_star"] for t in verdict.diagnostics["selection"]["best_of_n_turns"]] == [5, 5, 5]
    assert verdict.accounting.by_role["reward"].calls == 15 and "critique" not in verdict.accounting.by_role


async def test_image_critic_receives_an_injected_forgery_report() -> None:
    from debates.turns.best_of_n import BestOfN
    from debates.turns.base import TURN_POLICIES

    script = SelectorScript(answers={"text": lambda i: finish("TEXT SUPPORT"), "image": lambda i: finish("IMAGE REFUTE", f"CAND-{i}"),
                                     "cross_modal": lambda i: finish("MATCH")})
    config = bon_config("mmd-agent-bon", critique=True, n=2)
    config, pool, clients = seat_pool(config, {"text_agent": script, "image_agent": script, "cross_modal_agent": script})
    injected = lambda c: BestOfN(c, forgery_report=lambda image: f"ELA-SPLICE-MAP for {image.sha256[:8]}")  # noqa: E731
    with TURN_POLICIES.overridden("best_of_n", injected):
        await run_debate(config, M3D_SAMPLE, pool)
    critiques = [c.prompt for c in clients["image_agent"].calls if "What the forgery tool reports" in c.prompt]
    assert len(critiques) == 2 and all("ELA-SPLICE-MAP for" in p for p in critiques)


async def test_candidates_are_sampled_concurrently_with_distinct_seeds() -> None:
    delay = 0.3
    script = SelectorScript(answers={"text": lambda i: finish("TEXT REFUTE", f"CAND-{i}")})
    config = bon_config("mmd-agent-bon", n=5)
    config, pool, clients = seat_pool(config, {"text_agent": script}, delay_s=delay)
    await run_debate(config, M3D_SAMPLE, pool)
    candidates = [c for c in clients["text_agent"].calls if "CAND" not in c.prompt and "strict grader" not in c.prompt]
    assert len(candidates) == 5
    assert max(c.started for c in candidates) < min(c.finished for c in candidates), "all five calls overlap"
    span = max(c.finished for c in candidates) - min(c.started for c in candidates)
    assert span < 0.5 * 5 * delay, "about one delay, far from five in a row"
    assert len({c.kwargs["seed"] for c in candidates}) == 5
    assert {c.kwargs["temperature"] for c in candidates} == {0.8}


# --- the planner ------------------------------------------------------------------------------------


async def test_planner_level_0_gives_single_passes_and_is_asked_once_per_sample() -> None:
    script = SelectorScript(
        answers={"text": lambda i: finish("TEXT SUPPORT"), "image": lambda i: finish("IMAGE SUPPORT"), "cross_modal": lambda i: finish("MATCH")},
        plan="An everyday scene. [BON level-0]",
    )
    config, pool, _ = seat_pool(load_config("agentm3d"), {n: script for n in ("text_agent", "image_agent", "cross_modal_agent")})
    verdict = await run_debate(config, M3D_SAMPLE, pool)
    assert verdict.label == "original"
    assert [kind for kind, _ in script.seen] == ["planner", "answer", "answer", "answer"]
    selection = verdict.diagnostics["selection"]
    assert selection["escalated"] is False and selection["planner"] == {"level": 0, "error": None}
    assert selection["single_pass_turns"] == 3 and selection["m_star"] == []
    assert verdict.accounting.by_role["planner"].calls == 1 and "candidate" not in verdict.accounting.by_role

    second = await run_debate(config, M3D_SAMPLE.model_copy(update={"id": "other"}), pool)
    assert second.accounting.by_role["planner"].calls == 1, "a fresh plan for each sample"


async def test_planner_level_1_escalates_every_turn_and_unreadable_plans_escalate_with_the_reason() -> None:
    answers = {"text": lambda i: finish("TEXT SUPPORT", f"CAND-{i}"), "image": lambda i: finish("IMAGE REFUTE", f"CAND-{i}")}
    for plan, error in (("Hard: breaking news. [BON level-1]", None), ("I cannot tell", "unreadable plan")):
        script = SelectorScript(answers=answers, plan=plan)
        config, pool, _ = seat_pool(bon_config("agentm3d", skip_unanimous=False),
                                    {n: script for n in ("text_agent", "image_agent", "cross_modal_agent")})
        verdict = await run_debate(config, M3D_SAMPLE, pool)
        selection = verdict.diagnostics["selection"]
        assert selection["escalated"] is True and selection["planner"]["level"] == 1
        assert (selection["planner"]["error"] or "").startswith(error or "") and (error is None) == (selection["planner"]["error"] is None)
        assert len(selection["best_of_n_turns"]) == 2 and all(2 <= m <= 5 for m in selection["m_star"])
        assert verdict.label == "visual_veracity_distortion"


# --- composition --------------------------------------------------------------------------------


async def test_an_async_debate_whose_seats_use_best_of_n_turns() -> None:
    def debater(i: int) -> str:
        return f"CAND-{i} The photo is a known composite. FINAL ANSWER: fake\nCONFIDENCE: 0.9"

    script = SelectorScript(answers={"debater": debater}, reward=by_candidate({0: 0.1, 1: 0.3, 2: 0.95}))
    config = bon_config("async-three", kind="best_of_n", n=3)
    config, pool, _ = seat_pool(config, {n: script for n in ("agent_a", "agent_b", "agent_c")})
    verdict = await run_debate(config, M3D_SAMPLE.model_copy(update={"taxonomy": "binary"}), pool)
    assert verdict.label == "fake" and verdict.diagnostics["consensus_round"] == 1
    turns = verdict.diagnostics["selection"]["best_of_n_turns"]
    assert [t["speaker"] for t in turns] == ["agent_a", "agent_b", "agent_c"]
    assert all(t["chosen"] == 2 and t["critic"] is None for t in turns)
    assert all("CAND-2" in t.text for t in verdict.transcript)
    assert verdict.accounting.by_role["candidate"].calls == 9 and verdict.accounting.by_role["reward"].calls == 9
    assert verdict.accounting.by_agent["agent_b"].calls == 3


async def test_unanimous_candidates_skip_scoring_when_asked_and_disagreeing_ones_are_scored() -> None:
    def debater(i: int) -> str:
        label = "real" if i % 1009 == 2 else "fake"
        return f"CAND-{i} FINAL ANSWER: {label}\nCONFIDENCE: 0.9"

    def unanimous(i: int) -> str:
        return f"CAND-{i} FINAL ANSWER: fake\nCONFIDENCE: 0.9"

    for answers, expected_rewards in ((unanimous, 0), (debater, 3)):
        script = SelectorScript(answers={"debater": answers}, reward=by_candidate({0: 0.1, 1: 0.3, 2: 0.95}))
        config = bon_config("async-three", kind="best_of_n", n=3, skip_unanimous=True)
        config.seats = config.seats[:1]
        config, pool, _ = seat_pool(config, {"agent_a": script})
        verdict = await run_debate(config, M3D_SAMPLE.model_copy(update={"taxonomy": "binary"}), pool)
        rewards = verdict.accounting.by_role.get("reward")
        assert (rewards.calls if rewards else 0) == expected_rewards
        turn = verdict.diagnostics["selection"]["best_of_n_turns"][0]
        if expected_rewards == 0:
            assert turn["chosen"] == 0 and "scoring was skipped" in turn["note"]


# --- a reward model loaded from a local directory -------------------------------------------------


def tiny_reward_model(folder: Path, num_labels: int = 1) -> Path:
    """A randomly initialised two-layer BERT classifier with a 30-word vocabulary, saved like a real one."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "photo", "is", "fake", "real", "finish", "text",
             "image", "refute", "support", "post", "storm", "statue", "liberty", "a", "of", "and", "[", "]", ".",
             "score", "claim", "check", "my", "part"]
    (folder / "vocab.txt").write_text("\n".join(words) + "\n")
    BertTokenizer(str(folder / "vocab.txt")).save_pretrained(folder)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(words), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=128, num_labels=num_labels)
    BertForSequenceClassification(config).save_pretrained(folder)
    return folder


def test_reward_model_loads_from_a_local_directory_and_scores_on_the_unit_scale(tmp_path: Path) -> None:
    from debates.turns.rewards import LoadedRewardModel

    model = LoadedRewardModel(str(tiny_reward_model(tmp_path / "grm")), max_length=64)
    first = model.reward("Is the storm photo of the statue of liberty real?", "the photo is fake. Finish[TEXT REFUTE]")
    again = model.reward("Is the storm photo of the statue of liberty real?", "the photo is fake. Finish[TEXT REFUTE]")
    other = model.reward("Is the storm photo of the statue of liberty real?", "the photo is real")
    assert 0.0 < first < 1.0 and first == again and other != first
    two_class = LoadedRewardModel(str(tiny_reward_model(tmp_path / "two", num_labels=2)))
    assert 0.0 < two_class.reward("the claim", "real") < 1.0
    with pytest.raises(InputError, match="3 output classes"):
        LoadedRewardModel(str(tiny_reward_model(tmp_path / "three", num_labels=3)))
    with pytest.raises(InputError, match="nothing is downloaded at run time"):
        LoadedRewardModel(str(tmp_path / "missing"))
    with pytest.raises(InputError, match="local Hugging Face cache"):
        LoadedRewardModel("someone/not-a-cached-model")


async def test_best_of_n_with_a_sequence_classifier_reward_makes_no_reward_calls(tmp_path: Path) -> None:
    folder = tiny_reward_model(tmp_path / "grm")
    script = SelectorScript(answers={"text": lambda i: finish("TEXT REFUTE", f"the photo is fake {'. ' * i}")})
    config = bon_config("mmd-agent-bon", n=3, reward={"kind": "sequence_classifier", "model": str(folder)})
    config, pool, _ = seat_pool(config, {"text_agent": script})
    verdict = await run_debate(config, M3D_SAMPLE, pool)
    turn = verdict.diagnostics["selection"]["best_of_n_turns"][0]
    assert turn["reward"] == "sequence_classifier" and len(turn["scores"]) == 3
    assert all(0.0 < s["u"] < 1.0 for s in turn["scores"])
    assert "reward" not in verdict.accounting.by_role and verdict.accounting.by_role["candidate"].calls == 3


# --- every configuration from the command line ---------------------------------------------------


@pytest.mark.parametrize("name", ["standard", "bon", "mmd-agent", "mmd-agent-bon", "agentm3d"])
def test_every_selector_config_runs_from_the_command_line(name: str, tmp_path: Path) -> None:
    import json

    from typer.testing import CliRunner

    from debates.cli.main import app
    pass
    from tests.support.paths import REPO
    from tests.support.openai_stub_server import StubOpenAIServer, completion_body
    from tests.support.selector_script import stub_answer

    with StubOpenAIServer(lambda body, n: (200, completion_body(stub_answer(body)), 0.0)) as server:
        settings = tmp_path / "m3d.yaml"
        settings.write_text(f"backend: stub\nbackends:\n  stub: {{kind: vllm, model: test-model, base_url: '{server.base_url}', cache: false}}\n")
        result = CliRunner().invoke(app, [
            "debate", "--config", name, "--config-file", str(settings), "--json",
            "--text", (REPO / "examples" / "sample.txt").read_text().strip(), "--image", str(REPO / "examples" / "sandy_fake_29.jpg"),
        ])
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.stdout)
    assert verdict["config"] == name and verdict["label"] == "fake"
    assert verdict["diagnostics"]["answer"] == {"taxonomy": "m3d", "label": "visual_veracity_distortion"}
    escalated = name in ("bon", "mmd-agent-bon", "agentm3d")
    assert verdict["diagnostics"]["selection"]["escalated"] is escalated
    assert server.requests and all(r["model"] for r in server.requests)
