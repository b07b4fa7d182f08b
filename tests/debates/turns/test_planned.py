"""The planned turn policy: the planner asked once per sample, level 0 single passes, level 1 best-of-N."""

from __future__ import annotations



from debates.config_loader import load_config
from debates.session import run_sample
from tests.support.selector_script import SelectorScript
from tests.support.debate import seat_pool
from tests.support.cascade import M3D_SAMPLE, bon_config, finish


# --- the planner ------------------------------------------------------------------------------------


async def test_planner_level_0_gives_single_passes_and_is_asked_once_per_sample() -> None:
    script = SelectorScript(
        answers={"text": lambda i: finish("TEXT SUPPORT"), "image": lambda i: finish("IMAGE SUPPORT"), "cross_modal": lambda i: finish("MATCH")},
        plan="An everyday scene. [BON level-0]",
    )
    config, pool, _ = seat_pool(load_config("agentm3d"), {n: script for n in ("text_agent", "image_agent", "cross_modal_agent")})
    verdict = await run_sample(config, M3D_SAMPLE, pool)
    assert verdict.label == "original"
    assert [kind for kind, _ in script.seen] == ["planner", "answer", "answer", "answer"]
    selection = verdict.diagnostics.selection
    assert selection.escalated is False and selection.planner is not None and selection.planner.model_dump() == {"level": 0, "error": None}
    assert selection.single_pass_turns == 3 and selection.m_star == []
    assert verdict.accounting.by_role["planner"].calls == 1 and "candidate" not in verdict.accounting.by_role

    second = await run_sample(config, M3D_SAMPLE.model_copy(update={"id": "other"}), pool)
    assert second.accounting.by_role["planner"].calls == 1, "a fresh plan for each sample"


async def test_planner_level_1_escalates_every_turn_and_unreadable_plans_escalate_with_the_reason() -> None:
    answers = {"text": lambda i: finish("TEXT SUPPORT", f"CAND-{i}"), "image": lambda i: finish("IMAGE REFUTE", f"CAND-{i}")}
    for plan, error in (("Hard: breaking news. [BON level-1]", None), ("I cannot tell", "unreadable plan")):
        script = SelectorScript(answers=answers, plan=plan)
        config, pool, _ = seat_pool(bon_config("agentm3d", skip_unanimous=False),
                                    {n: script for n in ("text_agent", "image_agent", "cross_modal_agent")})
        verdict = await run_sample(config, M3D_SAMPLE, pool)
        selection = verdict.diagnostics.selection
        assert selection.escalated is True and selection.planner.level == 1
        assert (selection.planner.error or "").startswith(error or "") and (error is None) == (selection.planner.error is None)
        assert len(selection.best_of_n_turns) == 2 and all(2 <= m <= 5 for m in selection.m_star)
        assert verdict.label == "visual_veracity_distortion"
