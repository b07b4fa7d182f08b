"""Best-of-N turns: lazy and full scoring, critics, concurrent candidates, and best-of-N inside any debate."""

from __future__ import annotations


import pytest

from debates.config_loader import load_config
from debates.session import run_sample
from tests.support.selector_script import SelectorScript
from tests.support.debate import seat_pool
from tests.support.cascade import M3D_SAMPLE, bon_config, by_candidate, finish


async def test_lazy_scoring_stops_at_m_star_and_reports_saved_calls() -> None:
    script = SelectorScript(
        answers={"text": lambda i: finish("TEXT REFUTE", f"CAND-{i}")},
        reward=by_candidate({0: 0.9, 1: 0.1, 2: 1.0, 3: 1.0, 4: 1.0}),
        critique=lambda prompt: "Sound. The score is 10" if "CAND-0" in prompt else "Weak. The score is 1",
    )
    config = bon_config("mmd-agent-decoupled-bon", critique=True, critic_format="prose", early_stop=True, scoring="lazy", tau=0.5)
    config, pool, clients = seat_pool(config, {"text_agent": script})
    verdict = await run_sample(config, M3D_SAMPLE, pool)
    assert verdict.label == "textual_veracity_distortion" and "CAND-0" in verdict.transcript[0].text
    turn = verdict.diagnostics.selection.best_of_n_turns[0]
    assert turn.m_star == 2 and turn.chosen == 0 and turn.critic == "text_critic"
    assert [s.s for s in turn.scores] == [pytest.approx(1.9), pytest.approx(0.1)]
    assert turn.saved_calls.model_dump(exclude_none=True) == {"reward": 3, "critique": 3}
    roles = verdict.accounting.by_role
    assert roles["candidate"].calls == 5 and roles["reward"].calls == 2
    assert roles["critique"].calls == 3, "two critiques plus one logic check for the sample"
    assert verdict.diagnostics.selection.escalated is True
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
    verdict = await run_sample(config, M3D_SAMPLE, pool)
    turns = verdict.diagnostics.selection.best_of_n_turns
    assert [t.critic for t in turns] == ["text_critic", "image_critic", None]
    assert verdict.label == "cross_modal_consistency_distortion" and turns[2].chosen == 3
    assert turns[2].scores[-1].s == pytest.approx(0.9) and turns[2].m_star == 4
    image_critique = next(c.prompt for c in clients["image_agent"].calls if "What the forgery tool reports" in c.prompt)
    assert "fused forgery score" in image_critique, "the image critic is given the real forensic report"

    uniform, pool, _ = seat_pool(load_config("mmd-agent-decoupled-bon"), {"text_agent": script, "image_agent": script, "cross_modal_agent": script})
    verdict = await run_sample(uniform, M3D_SAMPLE, pool)
    assert [t.m_star for t in verdict.diagnostics.selection.best_of_n_turns] == [5, 5, 5]
    assert verdict.accounting.by_role["reward"].calls == 15 and "critique" not in verdict.accounting.by_role


async def test_image_critic_receives_an_injected_forgery_report() -> None:
    from debates.turns.best_of_n import BestOfN
    from debates.debate_engine.turn_policy import TURN_POLICIES

    script = SelectorScript(answers={"text": lambda i: finish("TEXT SUPPORT"), "image": lambda i: finish("IMAGE REFUTE", f"CAND-{i}"),
                                     "cross_modal": lambda i: finish("MATCH")})
    config = bon_config("mmd-agent-decoupled-bon", critique=True, n=2)
    config, pool, clients = seat_pool(config, {"text_agent": script, "image_agent": script, "cross_modal_agent": script})
    injected = lambda c: BestOfN(c, forgery_report=lambda image: f"ELA-SPLICE-MAP for {image.sha256[:8]}")  # noqa: E731
    with TURN_POLICIES.overridden("best_of_n", injected):
        await run_sample(config, M3D_SAMPLE, pool)
    critiques = [c.prompt for c in clients["image_agent"].calls if "What the forgery tool reports" in c.prompt]
    assert len(critiques) == 2 and all("ELA-SPLICE-MAP for" in p for p in critiques)


async def test_candidates_are_sampled_concurrently_with_distinct_seeds() -> None:
    delay = 0.3
    script = SelectorScript(answers={"text": lambda i: finish("TEXT REFUTE", f"CAND-{i}")})
    config = bon_config("mmd-agent-decoupled-bon", n=5)
    config, pool, clients = seat_pool(config, {"text_agent": script}, delay_s=delay)
    await run_sample(config, M3D_SAMPLE, pool)
    candidates = [c for c in clients["text_agent"].calls if "CAND" not in c.prompt and "strict grader" not in c.prompt]
    assert len(candidates) == 5
    assert max(c.started for c in candidates) < min(c.finished for c in candidates), "all five calls overlap"
    span = max(c.finished for c in candidates) - min(c.started for c in candidates)
    assert span < 0.5 * 5 * delay, "about one delay, far from five in a row"
    assert len({c.kwargs["seed"] for c in candidates}) == 5
    assert {c.kwargs["temperature"] for c in candidates} == {0.8}


# --- composition --------------------------------------------------------------------------------


async def test_an_async_debate_whose_seats_use_best_of_n_turns() -> None:
    def debater(i: int) -> str:
        return f"CAND-{i} The photo is a known composite. FINAL ANSWER: fake\nCONFIDENCE: 0.9"

    script = SelectorScript(answers={"debater": debater}, reward=by_candidate({0: 0.1, 1: 0.3, 2: 0.95}))
    config = bon_config("async-three", kind="best_of_n", n=3)
    config, pool, _ = seat_pool(config, {n: script for n in ("agent_a", "agent_b", "agent_c")})
    verdict = await run_sample(config, M3D_SAMPLE.model_copy(update={"taxonomy": "binary"}), pool)
    assert verdict.label == "fake" and verdict.diagnostics.consensus_round == 1
    turns = verdict.diagnostics.selection.best_of_n_turns
    assert [t.speaker for t in turns] == ["agent_a", "agent_b", "agent_c"]
    assert all(t.chosen == 2 and t.critic is None for t in turns)
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
        verdict = await run_sample(config, M3D_SAMPLE.model_copy(update={"taxonomy": "binary"}), pool)
        rewards = verdict.accounting.by_role.get("reward")
        assert (rewards.calls if rewards else 0) == expected_rewards
        turn = verdict.diagnostics.selection.best_of_n_turns[0]
        if expected_rewards == 0:
            assert turn.chosen == 0 and "scoring was skipped" in turn.note
