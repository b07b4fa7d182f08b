"""What a search spends, and where it need not: the n children as one request, score prompts that name the
check and show no menu, brief action menus, and ``t2agent-lean``'s departures kept out of ``t2agent``."""

from __future__ import annotations

from typing import Any

from debates.strategies.t2agent.config import T2AgentConfig
from debates.config_loader import load_config, with_overrides
from debates.session import run_sample
from m3d_agents.backends.factory import BackendPool
from m3d_agents.evidence import Evidence
from m3d_agents.sample import Sample
from m3d_agents.verdict import Verdict
from tests.support.paths import EXAMPLE_IMAGE
from tests.support.scripted import ScriptedClient, scripted_backend
from tests.support.t2agent_script import StepCall, TreeScript, last_action

POST = Sample(id="post-1", text="The mayor opened the new bridge in Alphaville on Monday.", images=[EXAMPLE_IMAGE], taxonomy="m3d")


class Pages:
    async def answer(self, query: str, sample: Sample, ledger: Any = None) -> list[Evidence]:
        return [Evidence(kind="wikipedia", url=f"https://en.wikipedia.org/wiki/{query}", text=f"{query} has a new bridge.")]


def step(call: StepCall) -> str:
    """Text: a Wikipedia step on an entity that depends on the seed, then TEXT SUPPORT; cross-modal: MISMATCH."""
    if call.check == "text" and call.k == 1:
        return f"Thought 1: Who is named here?\nAction 1: Wikipedia[{'Alpha' if call.seed % 2 == 0 else 'Beta'}]"
    if call.check == "text":
        return f"Thought {call.k}: The page agrees (call {call.seed}).\nAction {call.k}: Finish[TEXT SUPPORT]"
    if call.check == "cross_modal":
        return f"Thought {call.k}: Another city (call {call.seed}).\nAction {call.k}: Finish[MISMATCH]"
    return f"Thought {call.k}: Nothing odd (call {call.seed}).\nAction {call.k}: Finish[IMAGE SUPPORT]"


def script() -> TreeScript:
    return TreeScript(step=step, trajectory=lambda p: {"Wikipedia[Alpha]": 7, "Wikipedia[Beta]": 6}.get(last_action(p), 8),
                      confidence=lambda p: 8)


def config_of(name: str = "t2agent", **changes: Any) -> T2AgentConfig:
    config = load_config(name)
    assert isinstance(config, T2AgentConfig)
    return with_overrides(config, **changes) if changes else config  # type: ignore[return-value]


async def run(config: T2AgentConfig, **client: Any) -> tuple[Verdict, ScriptedClient]:
    scripted = ScriptedClient(script(), **client)
    pool = BackendPool()
    pool.add(scripted_backend(scripted, name="scripted"))
    verdict = await run_sample(config, POST, pool, backend="scripted", searchers={"wikipedia": Pages()})
    return verdict, scripted


def by_role(verdict: Verdict) -> dict[str, tuple[int, int]]:
    return {role: (u.calls, u.prompt_tokens) for role, u in verdict.accounting.by_role.items()}


async def test_the_children_of_an_expansion_are_one_request_where_the_backend_answers_several() -> None:
    separate, _ = await run(config_of())
    together, client = await run(config_of(), samples_choices=True)
    assert together.label == separate.label == "cross_modal_consistency_distortion"
    assert together.diagnostics.search.tree == separate.diagnostics.search.tree, "the same draws, seed plus i"
    assert together.diagnostics.search.tools == separate.diagnostics.search.tools
    calls, prompt = by_role(together)["step"]
    assert calls == 3 and by_role(separate)["step"][0] == 6
    assert prompt * 2 == by_role(separate)["step"][1], "each expansion's prompt is billed once, not once per child"
    assert by_role(together)["trajectory_score"] == by_role(separate)["trajectory_score"]
    assert [c.kwargs.get("n") for c in client.calls if "Actions you may take" in c.prompt] == [2, 2, 2]
    declined, client = await run(config_of(children_in_one_request=False), samples_choices=True)
    assert by_role(declined)["step"][0] == 6 and all(c.kwargs.get("n") is None for c in client.calls)


async def test_score_prompts_name_the_check_and_show_neither_its_task_nor_its_menu() -> None:
    _, client = await run(config_of())
    scores = [c.prompt for c in client.calls if "score is <" in c.prompt]
    text_scores = [p for p in scores if "Finish[TEXT REFUTE]" in p]
    assert text_scores and all("The agent's check: the text veracity of the post" in p for p in text_scores)
    assert all("Actions you may take" not in p and "- Wikipedia[" not in p and "prefer an encyclopedia" not in p for p in scores)
    steps = [c.prompt for c in client.calls if "Actions you may take" in c.prompt and "TEXT REFUTE" in c.prompt]
    assert "prefer an encyclopedia" in steps[0], "the step prompt keeps the whole task"
    _, client = await run(config_of(score_task="full"))
    full = [c.prompt for c in client.calls if "correctness score is <" in c.prompt and "TEXT REFUTE" in c.prompt]
    assert full and all("prefer an encyclopedia" in p for p in full)


async def test_step_menus_are_brief_unless_asked_for_in_full() -> None:
    brief_line = "- Wikipedia[entity]: Looks a name up on Wikipedia and returns the opening passages of the best matches.\n"
    _, client = await run(config_of())
    text_step = next(c.prompt for c in client.calls if "Actions you may take" in c.prompt and "TEXT REFUTE" in c.prompt)
    assert brief_line in text_step and " Use it " not in text_step
    _, client = await run(config_of(menu="full"))
    text_step = next(c.prompt for c in client.calls if "Actions you may take" in c.prompt and "TEXT REFUTE" in c.prompt)
    assert "- Wikipedia[entity]: Looks a name up on Wikipedia and returns the opening passages of the best matches. Use it " in text_step


async def test_on_a_text_only_backend_steps_and_scores_read_the_findings_unless_lean_keeps_scores_to_the_observations() -> None:
    _, client = await run(config_of())
    image_steps = [c.prompt for c in client.calls if "Actions you may take" in c.prompt and "Finish[MISMATCH]" in c.prompt]
    scores = [c.prompt for c in client.calls if "score is <" in c.prompt]
    assert image_steps and all("What analysis tools report about it" in p for p in image_steps)
    assert scores and all("What analysis tools report about it" in p and "not shown here" not in p for p in scores)
    _, client = await run(config_of("t2agent-lean"))
    scores = [c.prompt for c in client.calls if "score is <" in c.prompt]
    assert scores and all("What analysis tools report" not in p and "not shown here" in p for p in scores)


async def test_the_trajectory_score_asks_for_detail_in_the_papers_search_and_for_four_sentences_in_the_lean_one() -> None:
    _, client = await run(config_of())
    detailed = [c.prompt for c in client.calls if "correctness score is <" in c.prompt]
    assert detailed and all("in detail" in p and "four sentences" not in p for p in detailed)
    _, client = await run(config_of("t2agent-lean"))
    brief = [c.prompt for c in client.calls if "correctness score is <" in c.prompt]
    assert brief and all("at most four sentences" in p and "in detail" not in p for p in brief)


CUTS = {"scores_see_image", "trajectory_analysis", "retrieval"}
"""The top-level settings in which t2agent-lean departs from t2agent (the others are in search: and subtasks:)."""


async def test_t2agent_stays_the_papers_search_and_the_lean_configuration_departs_by_name() -> None:
    paper, lean = config_of(), config_of("t2agent-lean")
    assert (paper.search.children, paper.search.trajectory_scores, paper.k) == (2, "every_child", 4)
    assert (lean.search.children, lean.search.trajectory_scores, lean.k) == (1, "ranked_only", 3)
    assert (paper.scores_see_image, paper.trajectory_analysis) == (True, "detailed")
    assert (lean.scores_see_image, lean.trajectory_analysis) == (False, "brief")
    assert paper.retrieval is not None and lean.retrieval is not None
    assert (paper.retrieval.leakage.enabled, lean.retrieval.leakage.enabled) == (False, True)
    assert all(s.sees_image for s in paper.subtasks), "every step of the paper's search sees the image"
    assert [s.name for s in lean.subtasks if not s.sees_image] == ["text"]
    assert [s.model_dump(exclude={"sees_image"}) for s in lean.subtasks] == [s.model_dump(exclude={"sees_image"}) for s in paper.subtasks]
    leaned = lean.search.model_dump(exclude={"children", "trajectory_scores", "iterations"})
    assert leaned == paper.search.model_dump(exclude={"children", "trajectory_scores", "iterations"})
    same = {"name", "description", *CUTS, "search", "subtasks", "departures"}
    assert lean.model_dump(exclude=same) == paper.model_dump(exclude=same)
    assert (paper.retrieval.rate_sources, lean.retrieval.rate_sources) == (False, True), "lean rates sources, declared"
    assert "reliability-ratings" in {d.id for d in lean.departures}
    assert lean.retrieval.model_dump(exclude={"leakage", "rate_sources"}) == paper.retrieval.model_dump(
        exclude={"leakage", "rate_sources"})


async def test_ranked_only_leaves_a_lone_step_unscored_and_still_scores_every_answer() -> None:
    verdict, client = await run(config_of("t2agent-lean"))
    search = verdict.diagnostics.search
    text = search.tree.children[0]
    lone_step = text.children[0]
    assert len(text.children) == 1 and lone_step.kind == "step" and lone_step.trajectory_score is None
    answer = lone_step.children[0]
    assert answer.kind == "answer" and answer.trajectory_score == 0.8 and answer.reward == 0.8
    assert search.unscored_steps == 1 and search.missing_scores["trajectory_score"] == 0
    assert by_role(verdict)["trajectory_score"][0] == 2, "the two answers (text, cross-modal), not the step"
    assert by_role(verdict)["step"][0] == 3 and by_role(verdict)["confidence_score"][0] == 2
    assert verdict.label == "cross_modal_consistency_distortion"
    turn = next(t for t in verdict.transcript if t.speaker == "text" and t.role == "step")
    assert "Trajectory score: not asked (no sibling to rank it against)" in turn.text
    assert not any(last_action(c.prompt).startswith("Wikipedia[") for c in client.calls if "correctness score is <" in c.prompt)


async def test_ranked_only_scores_every_child_that_has_a_sibling() -> None:
    every, _ = await run(config_of())
    ranked, _ = await run(config_of(search={**config_of().search.model_dump(), "trajectory_scores": "ranked_only"}))
    assert by_role(ranked) == by_role(every) and ranked.diagnostics.search.unscored_steps == 0
