"""AgentM3D as its paper describes it (eqs. 5-17): who sees what, the shared image description, the
critics, Alg. 1 as written against the lazy variant, and the planner's questions."""

from __future__ import annotations

from typing import Any, Mapping, Sequence

import pytest
from autogen_core import Image as AgentImage
from autogen_core.models import LLMMessage

from debates.debate_engine.config import TURN_POLICY_SETTINGS, DebateConfig
from debates.session import run_sample
from debates.config_loader import load_config
from m3d_agents.evidence import Evidence
from m3d_agents.sample import Sample
from tests.support.debate import seat_pool
from tests.support.paths import EXAMPLE_IMAGE
from tests.support.scripted import RecordedCall, text_of

CAPTION = "CAPTION-TEXT storm clouds over the Statue of Liberty during Hurricane Sandy"
SAMPLE = Sample(text=CAPTION, images=[EXAMPLE_IMAGE], taxonomy="m3d")
WIKI = Evidence(kind="wikipedia", url="https://en.wikipedia.org/wiki/Hurricane_Sandy", text="WIKI-EVIDENCE Sandy hit New York")
ACTIONS = {"its TEXT is true": "TEXT SUPPORT", "its IMAGE is genuine": "IMAGE SUPPORT", "image and its text belong together": "MATCH"}


def respond(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
    system, everything = text_of(messages[:1]), text_of(messages)
    if "Describe the attached image for a fact-checker" in everything:
        return "DESCRIPTION-T-IMAGE a statue under dark clouds, harbour in the foreground"
    if "checking effort" in system:
        return "[BON level-0]"
    for marker, action in ACTIONS.items():
        if marker in system:
            return f"Checked.\nFinish[{action}]\nCONFIDENCE: 0.8"
    raise AssertionError(f"unexpected call: {everything[:120]}")


def has_image(call: RecordedCall) -> bool:
    return any(isinstance(part, AgentImage) for m in call.messages for part in (m.content if isinstance(m.content, list) else []))


def cascade(name: str) -> DebateConfig:
    config = load_config(name)
    assert isinstance(config, DebateConfig)
    return config


@pytest.mark.parametrize("vision", [True, False])
async def test_each_cascade_agent_sees_only_its_own_inputs(vision: bool) -> None:
    config, pool, clients = seat_pool(cascade("mmd-agent-decoupled"), {n: respond for n in ("text_agent", "image_agent", "cross_modal_agent")},
                                      vision=vision)
    verdict = await run_sample(config, SAMPLE, pool, evidence=[WIKI])
    assert verdict.label == "original"
    text_call = clients["text_agent"].calls[-1]
    assert CAPTION in text_call.prompt and "WIKI-EVIDENCE" in text_call.prompt
    assert not has_image(text_call) and "DESCRIPTION" not in text_call.prompt and "File metadata" not in text_call.prompt
    image_call = clients["image_agent"].calls[-1]
    assert CAPTION not in image_call.prompt and "WIKI-EVIDENCE" not in image_call.prompt
    cross_call = clients["cross_modal_agent"].calls[-1]
    assert CAPTION in cross_call.prompt and "WIKI-EVIDENCE" not in cross_call.prompt
    for call in (image_call, cross_call):
        assert "fused forgery score" not in call.prompt and "Forensics" not in call.prompt, "the forgery report is the critic's"
        assert has_image(call) is vision
        if vision:
            assert "DESCRIPTION-T-IMAGE" in call.prompt
        else:
            assert "File metadata:" in call.prompt and "OCR" in call.prompt, "OCR and metadata stand in for the description"
    descriptions = [c for client in clients.values() for c in client.calls if "Describe the attached image" in c.prompt]
    assert len(descriptions) == int(vision), "one description per sample, shared by the image and cross-modal agents"
    assert len(verdict.diagnostics.image_descriptions) == 1


@pytest.mark.parametrize("name", ["mmd-agent-decoupled", "agentm3d"])
async def test_the_image_description_is_made_only_when_an_agent_that_reads_it_is_asked(name: str) -> None:
    """T_image is the image and cross-modal agents' input: a cascade that its text agent ends (eq. 9)
    never makes it, and one that reaches them makes it once."""
    def text_refutes(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
        if "its TEXT is true" in text_of(messages[:1]):
            return "The date is wrong.\nFinish[TEXT REFUTE]\nCONFIDENCE: 0.9"
        return respond(messages, kwargs)

    seats = ("text_agent", "image_agent", "cross_modal_agent")
    for script, label, described in ((text_refutes, "textual_veracity_distortion", 0), (respond, "original", 1)):
        config, pool, clients = seat_pool(cascade(name), {n: script for n in seats}, vision=True)
        verdict = await run_sample(config, SAMPLE, pool, evidence=[WIKI])
        assert verdict.diagnostics.answer.label == label
        descriptions = [c for client in clients.values() for c in client.calls if "Describe the attached image" in c.prompt]
        assert len(descriptions) == described
        assert bool(verdict.diagnostics.image_descriptions) is bool(described)


def by_candidate(scores: dict[int, float]) -> Any:
    def reward(candidate: str) -> str:
        return f"SCORE: {next(v for k, v in scores.items() if f'CAND-{k} ' in candidate)}"

    return reward


@pytest.mark.parametrize(("name", "chosen", "label"), [("agentm3d", 4, "textual_veracity_distortion"),
                                                       ("agentm3d-lazy", 0, "original")])
async def test_alg1_as_written_and_the_lazy_variant_choose_different_candidates(name: str, chosen: int, label: str) -> None:
    """Rewards (0.6, 0.5, 0.0, 0.0, 1.0) and tau 0.3: scored lazily in sampling order the gap after
    three candidates is 0.6 - 0.25 > 0.3, so candidate 0 is kept; sorted over all five, the best (4) wins."""
    from tests.support.selector_script import SelectorScript

    def answer(i: int) -> str:
        return f"CAND-{i} checked.\nFinish[{'TEXT REFUTE' if i == 4 else 'TEXT SUPPORT'}]\nCONFIDENCE: 0.8"

    script = SelectorScript(answers={"text": answer, "image": lambda i: "ok\nFinish[IMAGE SUPPORT]", "cross_modal": lambda i: "ok\nFinish[MATCH]"},
                            reward=by_candidate({0: 0.6, 1: 0.5, 2: 0.0, 3: 0.0, 4: 1.0}))
    config = cascade(name).model_copy(deep=True)
    config.seats = config.seats[:1]
    config.seats[0].turn_policy = TURN_POLICY_SETTINGS.validate_python(
        {**config.seats[0].turn_policy.model_dump(), "kind": "best_of_n", "critique": False, "tau": 0.3, "skip_unanimous": False})
    config, pool, _ = seat_pool(config, {"text_agent": script})
    verdict = await run_sample(config, SAMPLE, pool)
    turn = verdict.diagnostics.selection.best_of_n_turns[0]
    assert turn.chosen == chosen and verdict.diagnostics.answer.label == label
    assert turn.m_star == (2 if name == "agentm3d" else 3)
    assert len(turn.scores) == (5 if name == "agentm3d" else 3)


async def test_critics_answer_a_bare_score_and_only_the_image_critic_gets_the_forgery_report() -> None:
    seen: list[str] = []

    def critic_aware(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
        system, everything = text_of(messages[:1]), text_of(messages)
        if "You are a critic" in system:
            seen.append(everything)
            assert "Reply with the score alone" in system and "0.5 means" in system
            return "0.75"
        if "strict grader" in text_of(messages[-1:]):
            return "SCORE: 0.5"
        if "internal logic, not for its truth" in everything:
            return '{"consistent": true, "issues": [], "rationale": "consistent"}'
        if "checking effort" in system:
            return "[BON level-1]"
        seed = int(kwargs.get("seed", 0) or 0)
        for marker, action in (("its TEXT is true", "TEXT SUPPORT"), ("its IMAGE is genuine", "IMAGE REFUTE")):
            if marker in system:
                return f"Candidate {seed}.\nFinish[{action}]\nCONFIDENCE: 0.7"
        raise AssertionError(everything[:100])

    config, pool, clients = seat_pool(cascade("agentm3d"), {n: critic_aware for n in ("text_agent", "image_agent", "cross_modal_agent")})
    verdict = await run_sample(config, SAMPLE, pool)
    assert verdict.label == "visual_veracity_distortion"
    turns = verdict.diagnostics.selection.best_of_n_turns
    assert all(s.q == 0.75 for t in turns for s in t.scores)
    image_critiques = [p for p in seen if "What the forgery tool reports" in p]
    text_critiques = [p for p in seen if "logic-consistency check" in p]
    assert image_critiques and all("fused forgery score" in p and CAPTION not in p for p in image_critiques)
    assert text_critiques and all("fused forgery score" not in p and CAPTION in p for p in text_critiques)
    image_answers = [c for c in clients["image_agent"].calls if "its IMAGE is genuine" in text_of(c.messages[:1])]
    assert image_answers and all("fused forgery score" not in c.prompt for c in image_answers)


async def test_the_prose_critic_stays_an_option() -> None:
    from tests.support.selector_script import SelectorScript

    script = SelectorScript(answers={"text": lambda i: f"CAND-{i} \nFinish[TEXT SUPPORT]"},
                            critique=lambda prompt: "Mostly supported. The score is 7")
    config = cascade("mmd-agent-decoupled-bon").model_copy(deep=True)
    config.seats = config.seats[:1]
    config.seats[0].turn_policy = config.seats[0].turn_policy.model_copy(update={"critique": True, "critic_format": "prose", "n": 2})
    config, pool, _ = seat_pool(config, {"text_agent": script})
    verdict = await run_sample(config, SAMPLE, pool)
    scores = verdict.diagnostics.selection.best_of_n_turns[0].scores
    assert [s.q for s in scores] == [pytest.approx(6 / 9)] * 2


async def test_the_planner_weighs_the_papers_three_questions_without_tools() -> None:
    config, pool, clients = seat_pool(cascade("agentm3d"), {n: respond for n in ("text_agent", "image_agent", "cross_modal_agent")})
    await run_sample(config, SAMPLE, pool)
    planner = next(c for c in clients["text_agent"].calls if "checking effort" in text_of(c.messages[:1]))
    for question in ("agree, contradict each other", "concrete visual evidence", "image alone settle"):
        assert question in planner.prompt
    assert "Forensics" not in planner.prompt and "fused forgery score" not in planner.prompt
    system = " ".join(text_of(planner.messages[:1]).split())
    assert "Reply with one of these two tags and nothing else" in system, "the paper asks for the action alone (paper line 323)"
    assert "sentence" not in system


async def test_the_image_critic_reads_the_learned_detector_the_run_names(tmp_path: Any) -> None:
    """AgentM3D's image critic reads a learned detector (PatchCraft, paper line 373): with weights named
    under tools.learned_detector the critic reads that detector, made once per post; without, the fused
    CPU forensics."""
    torch = pytest.importorskip("torch")
    from debates.tool_settings import ToolSettings

    class RedIsFake(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return (x[:, :1] - x[:, 1:2]) * 20.0

    weights = tmp_path / "detector.pt"
    torch.jit.script(RedIsFake()).save(str(weights))
    for tools, expected, absent in (({}, "fused forgery score", "learned detector"),
                                    ({"learned_detector": ToolSettings(model=weights)}, "learned detector detector.pt",
                                     "fused forgery score")):
        seen: list[str] = []

        def critic_aware(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any], seen: list[str] = seen) -> str:
            system, everything = text_of(messages[:1]), text_of(messages)
            if "You are a critic" in system:
                seen.append(everything)
                return "0.5"
            if "strict grader" in text_of(messages[-1:]):
                return "SCORE: 0.5"
            if "internal logic, not for its truth" in everything:
                return '{"consistent": true, "issues": [], "rationale": "consistent"}'
            if "checking effort" in system:
                return "[BON level-1]"
            for marker, action in (("its TEXT is true", "TEXT SUPPORT"), ("its IMAGE is genuine", "IMAGE REFUTE")):
                if marker in system:
                    return f"Candidate {int(kwargs.get('seed', 0) or 0)}.\nFinish[{action}]\nCONFIDENCE: 0.7"
            raise AssertionError(everything[:100])

        config = cascade("agentm3d").model_copy(update={"tools": {**cascade("agentm3d").tools, **tools}})
        config, pool, _ = seat_pool(config, {n: critic_aware for n in ("text_agent", "image_agent", "cross_modal_agent")})
        await run_sample(config, SAMPLE, pool)
        image_critiques = [p for p in seen if "What the forgery tool reports" in p]
        assert len(image_critiques) == 5
        assert all(expected in p and absent not in p for p in image_critiques)


@pytest.mark.parametrize("settings", ["", "tools:\n  logic_check: {backend: qwen4b}\n  learned_detector: {model: /weights/patchcraft.pt}\n"])
def test_agentm3d_lists_its_critics_tools_as_departures_until_the_run_gives_them(settings: str, tmp_path: Any) -> None:
    from typer.testing import CliRunner

    from debates.cli.main import app

    config_file = tmp_path / "m3d.yaml"
    backends = "backend: local\nbackends:\n  qwen4b: {kind: vllm, model: Qwen/Qwen3-4B-Instruct-2507, base_url: 'http://127.0.0.1:9/v1'}\n"
    config_file.write_text(backends + settings)
    result = CliRunner().invoke(app, ["reproduce", "agentm3d-table1", "--plan", "--config-file", str(config_file)],
                                env={"COLUMNS": "400", "TERM": "dumb", "M3D_FORGERY_MODEL": ""})
    assert result.exit_code == 0, result.output
    given = bool(settings)
    assert ("[own-model-logic-check]" in result.output) is not given, "the paper runs the check on Qwen3-4B (line 371)"
    assert ("[forgery-critic-fused]" in result.output) is not given, "the paper's critic reads PatchCraft (line 373)"
    assert ("[forgery-critic-learned]" in result.output) is given
