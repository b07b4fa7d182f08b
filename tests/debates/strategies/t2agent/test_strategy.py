"""The ``t2agent`` strategy end to end with a scripted model: the worked scenario, accounting, streaming,
the depth limit, dead steps, memory, concurrency, cancellation and isolation between posts."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from debates.strategies.t2agent.config import T2AgentConfig
from debates.strategy import RunContext
from debates.config_loader import load_config, with_overrides
from debates.session import run_sample
from m3d_agents.backends.factory import BackendPool
from m3d_agents.evidence import Evidence
from m3d_agents.sample import Sample
from m3d_agents.verdict import TranscriptTurn, Verdict
from tests.support.paths import EXAMPLE_IMAGE
from tests.support.scripted import ScriptedClient, scripted_backend
from tests.support.t2agent_script import StepCall, TreeScript, last_action

POST = Sample(id="post-1", text="The mayor opened the new bridge in Alphaville on Monday.", images=[EXAMPLE_IMAGE], taxonomy="m3d")


class DictSearcher:
    """A search provider backed by a dictionary; records every query."""

    def __init__(self, pages: dict[str, str] | None = None, kind: str = "wikipedia") -> None:
        self.pages = pages or {}
        self.kind = kind
        self.queries: list[str] = []

    async def answer(self, query: str, sample: Sample, ledger: Any = None) -> list[Evidence]:
        self.queries.append(query)
        text = self.pages.get(query, f"{query} is a small town with a new bridge.")
        return [Evidence(kind="wikipedia", url=f"https://en.wikipedia.org/wiki/{query}", text=text)]


def scenario_step(call: StepCall) -> str:
    """Text: two Wikipedia steps on different entities, then Finish[TEXT SUPPORT]; cross-modal: MISMATCH."""
    if call.check == "text" and call.k == 1:
        entity = "Alpha" if call.seed % 2 == 0 else "Beta"
        return f"Thought 1: Who is named here?\nAction 1: Wikipedia[{entity}]"
    if call.check == "text":
        return f"Thought {call.k}: The page agrees with the text (call {call.seed}).\nAction {call.k}: Finish[TEXT SUPPORT]"
    if call.check == "cross_modal":
        return f"Thought {call.k}: The picture shows another city (call {call.seed}).\nAction {call.k}: Finish[MISMATCH]"
    return f"Thought {call.k}: Nothing odd (call {call.seed}).\nAction {call.k}: Finish[IMAGE SUPPORT]"


def scenario_trajectory(prompt: str) -> int:
    return {"Wikipedia[Alpha]": 7, "Wikipedia[Beta]": 6}.get(last_action(prompt), 8)


def scenario_script(**changes: Any) -> TreeScript:
    values: dict[str, Any] = {"step": scenario_step, "trajectory": scenario_trajectory, "confidence": lambda prompt: 8}
    values.update(changes)
    return TreeScript(**values)


def tree_config(**search: Any) -> T2AgentConfig:
    config = load_config("t2agent")
    assert isinstance(config, T2AgentConfig)
    if search:
        config = with_overrides(config, search={**config.search.model_dump(), **search})  # type: ignore[assignment]
    return config


async def run_tree(
    script: TreeScript, config: T2AgentConfig | None = None, sample: Sample = POST, delay_s: float = 0.0, **options: Any
) -> tuple[Verdict, ScriptedClient, list[TranscriptTurn]]:
    client = ScriptedClient(script, delay_s=delay_s)
    pool = BackendPool()
    pool.add(scripted_backend(client, name="scripted"))
    turns: list[TranscriptTurn] = []
    options.setdefault("searchers", {"wikipedia": DictSearcher()})
    verdict = await run_sample(config or tree_config(), sample, pool, backend="scripted", on_turn=turns.append, **options)
    return verdict, client, turns


def calls_by_role(verdict: Verdict) -> dict[str, int]:
    return {role: usage.calls for role, usage in verdict.accounting.by_role.items()}


async def test_the_worked_scenario_prunes_text_then_stops_early_on_cross_modal() -> None:
    searcher = DictSearcher()
    verdict, _, turns = await run_tree(scenario_script(), searchers={"wikipedia": searcher})
    assert verdict.label == "cross_modal_consistency_distortion" and verdict.confidence == 0.8
    assert calls_by_role(verdict) == {"prior": 1, "step": 6, "trajectory_score": 6, "confidence_score": 2}
    assert sorted(searcher.queries) == ["Alpha", "Beta"]
    speakers = list(dict.fromkeys(t.speaker for t in verdict.transcript))
    assert speakers == ["prior", "text", "cross_modal"]
    assert turns == verdict.transcript, "every turn was streamed as it finished"
    assert [t.role for t in turns if t.speaker == "text"] == ["step", "step", "answer", "answer", "iteration"]
    search = verdict.diagnostics.search
    assert verdict.diagnostics.stop_reason.startswith("early stop") and verdict.diagnostics.iterations == 2
    assert (search.pruned, search.early_stop, search.uct, search.tree_size) == (["text"], "cross_modal", "eq3", 10)
    assert search.tools.runs == {"Wikipedia": 2} and search.missing_scores == {"trajectory_score": 0, "confidence_score": 0}
    assert search.tree.children[0].status == "pruned" and len(search.tree.children[0].children) == 2
    findings = {f.subtask: (f.label, f.distortion) for f in verdict.findings}
    assert findings == {"text": ("TEXT SUPPORT", False), "image": (None, None), "cross_modal": ("MISMATCH", True)}
    assert len(verdict.evidence_ids) == 2, "both Wikipedia answers are cited by id"
    text_finding = next(f for f in verdict.findings if f.subtask == "text")
    assert len(text_finding.evidence_ids) == 1 and text_finding.evidence_ids[0] in verdict.evidence_ids
    assert verdict.accounting.model_calls <= tree_config().bound()


async def test_iteration_one_makes_nine_calls_by_role_and_fuses_the_pruned_text() -> None:
    searcher = DictSearcher()
    verdict, _, _ = await run_tree(scenario_script(), tree_config(iterations=1), searchers={"wikipedia": searcher})
    assert calls_by_role(verdict) == {"prior": 1, "step": 4, "trajectory_score": 4, "confidence_score": 1}
    assert len(searcher.queries) == 2
    assert verdict.label == "original" and verdict.diagnostics.decided_by == "fusion"
    assert verdict.diagnostics.search.p_real == pytest.approx(0.8)
    assert verdict.diagnostics.stop_reason == "K iterations spent (K = 1)"


async def test_a_binary_post_gets_the_collapsed_label() -> None:
    verdict, _, _ = await run_tree(scenario_script(), sample=POST.model_copy(update={"taxonomy": "binary"}))
    assert verdict.label == "fake" and verdict.taxonomy == "binary"


async def test_the_depth_limit_demands_a_finish_and_an_unreadable_step_is_a_dead_node() -> None:
    def step(call: StepCall) -> str:
        if call.must_finish and call.check == "text":
            return f"Thought {call.k}: Let me look once more.\nAction {call.k}: Wikipedia[Alpha]"
        if call.must_finish:
            return f"Thought {call.k}: Done.\nAction {call.k}: Finish[{'MATCH' if call.check == 'cross_modal' else 'IMAGE SUPPORT'}]"
        return f"Thought {call.k}: Look it up.\nAction {call.k}: Wikipedia[Alpha]"

    script = scenario_script(step=step, confidence=lambda prompt: 5)
    verdict, client, _ = await run_tree(script, tree_config(depth=2, iterations=1, children=1))
    steps = [c.prompt for c in client.calls if "Actions you may take" in c.prompt]
    assert "This is your last step" not in steps[0] and "This is your last step" in steps[1]
    retries = tree_config().parse_retries
    assert len(steps) == 1 + (retries + 1), "the forced step was asked again, then given up"
    search = verdict.diagnostics.search
    assert search.dead_steps == 1
    dead = search.tree.children[0].children[0].children[0]
    assert dead.kind == "dead" and dead.value == 0.0 and "must end the check" in dead.error
    assert verdict.abstained and "no subtask" in (verdict.abstain_reason or "")


async def test_failure_memory_reaches_later_steps_of_the_same_subtask_only() -> None:
    def step(call: StepCall) -> str:
        if call.check == "cross_modal":
            return f"Thought {call.k}: They fit (call {call.seed}).\nAction {call.k}: Finish[MATCH]"
        return scenario_step(call)

    config = tree_config(iterations=6)
    _, client, _ = await run_tree(scenario_script(step=step, confidence=lambda p: 6), config)
    steps = [c.prompt for c in client.calls if "Actions you may take" in c.prompt]
    text_steps = [p for p in steps if "Finish[TEXT REFUTE]" in p]
    others = [p for p in steps if "Finish[TEXT REFUTE]" not in p]
    assert all("Earlier attempts" not in p for p in text_steps[:4])
    later = text_steps[4]
    assert "Earlier attempts" in later and "Action 2: Finish[TEXT SUPPORT]" in later.split("Earlier attempts")[1]
    assert len(others) == 4 and all("TEXT SUPPORT" not in p and "Earlier attempts" not in p for p in others)


async def test_the_children_of_an_expansion_are_asked_concurrently() -> None:
    _, client, _ = await run_tree(scenario_script(), delay_s=0.05)
    steps = [c for c in client.calls if "Actions you may take" in c.prompt]
    first, second = steps[0], steps[1]
    assert second.started < first.finished, "the second step call started before the first one finished"


async def test_identical_children_are_scored_once_when_reuse_is_on() -> None:
    def same(call: StepCall) -> str:
        answer = {"text": "TEXT SUPPORT", "image": "IMAGE SUPPORT", "cross_modal": "MATCH"}[call.check]
        return f"Thought {call.k}: It holds.\nAction {call.k}: Finish[{answer}]"

    verdict, _, _ = await run_tree(scenario_script(step=same, confidence=lambda p: 9), tree_config(iterations=1))
    assert calls_by_role(verdict)["trajectory_score"] == 1
    assert verdict.diagnostics.search.reused_scores == 1
    config = tree_config(iterations=1).model_copy(update={"reuse_scores": False})
    verdict, _, _ = await run_tree(scenario_script(step=same, confidence=lambda p: 9), config)
    assert calls_by_role(verdict)["trajectory_score"] == 2


async def test_cancelling_mid_iteration_stops_the_step_calls_in_flight() -> None:
    client = ScriptedClient(scenario_script(), delay_s=5.0)
    pool = BackendPool()
    pool.add(scripted_backend(client, name="scripted"))
    config = tree_config().model_copy(update={"search": tree_config().search.model_copy(update={"priors": "uniform"})})
    task = asyncio.ensure_future(run_sample(config, POST, pool, backend="scripted"))
    for _ in range(200):
        await asyncio.sleep(0.01)
        if len(client.calls) >= 2:
            break
    assert len(client.calls) == 2, "both step calls of the first expansion are in flight"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.sleep(0.05)
    assert all(call.finished == 0.0 for call in client.calls), "no call ran to its end"
    assert len(client.calls) == 2


async def test_two_posts_in_a_row_share_no_tree_memory_or_tool_cache() -> None:
    searcher = DictSearcher()
    script = scenario_script()
    client = ScriptedClient(script)
    pool = BackendPool()
    pool.add(scripted_backend(client, name="scripted"))
    config = tree_config()
    first = await run_sample(config, POST, pool, backend="scripted", searchers={"wikipedia": searcher})
    second = await run_sample(config, POST.model_copy(update={"id": "post-2"}), pool, backend="scripted",
                              searchers={"wikipedia": searcher})
    assert sorted(searcher.queries) == ["Alpha", "Alpha", "Beta", "Beta"], "the second post ran its tools again"
    assert first.diagnostics.search.tree == second.diagnostics.search.tree
    assert calls_by_role(first) == calls_by_role(second)
    second_steps = [c.prompt for c in client.calls if "Actions you may take" in c.prompt][6:]
    assert all("Earlier attempts" not in p for p in second_steps)


async def test_uniform_priors_make_no_call_and_random_priors_are_reproducible() -> None:
    uniform = tree_config(priors="uniform")
    verdict, _, turns = await run_tree(scenario_script(), uniform)
    assert "prior" not in calls_by_role(verdict)
    assert verdict.diagnostics.search.priors.model_dump() == {"source": "uniform", "values": {"text": 1 / 3, "image": 1 / 3, "cross_modal": 1 / 3},
                                                       "error": None}
    assert turns[0].speaker == "prior" and "uniform" in turns[0].text
    seeded = tree_config(priors="random", prior_seed=7)
    first, _, _ = await run_tree(scenario_script(), seeded)
    again, _, _ = await run_tree(scenario_script(), seeded)
    other, _, _ = await run_tree(scenario_script(), tree_config(priors="random", prior_seed=8))
    values = first.diagnostics.search.priors.values
    assert values == again.diagnostics.search.priors.values != other.diagnostics.search.priors.values
    assert "prior" not in calls_by_role(first)


async def test_model_priors_need_not_sum_to_one_and_the_highest_is_searched_first() -> None:
    verdict, _, _ = await run_tree(scenario_script(priors="All plausible. The likelihoods are [0.2, 0.9, 0.9]"), tree_config(iterations=1))
    priors = verdict.diagnostics.search.priors
    assert priors.source == "lvlm" and priors.values == {"text": 0.2, "image": 0.9, "cross_modal": 0.9}
    first_path = verdict.diagnostics.search.path_per_iteration[0]
    assert first_path[1] == verdict.diagnostics.search.tree.children[1].id, "image: highest prior, first in order"


async def test_a_wrong_count_of_priors_is_retried_then_uniform_with_the_error_recorded() -> None:
    verdict, client, turns = await run_tree(scenario_script(priors="The likelihoods are [0.5, 0.5]"), tree_config(iterations=1))
    retries = tree_config().parse_retries
    assert calls_by_role(verdict)["prior"] == retries + 1
    priors = verdict.diagnostics.search.priors
    assert priors.source == "uniform_after_error" and "2 values, expected 3" in priors.error
    assert turns[0].parse_error and verdict.accounting.parse_retries >= retries


async def test_an_unreadable_score_is_retried_then_recorded_as_missing() -> None:
    verdict, _, _ = await run_tree(scenario_script(confidence=lambda prompt: 11), tree_config(iterations=1))
    retries = tree_config().parse_retries
    assert calls_by_role(verdict)["confidence_score"] == retries + 1
    search = verdict.diagnostics.search
    assert search.missing_scores["confidence_score"] == 1
    assert verdict.abstained, "an answer without S_C neither prunes, stops nor enters the fusion"


def test_the_context_builds_a_fresh_strategy_per_run() -> None:
    ctx = RunContext(pool=BackendPool())
    assert ctx.searchers == {} and ctx.ledger.records == []


def images_by_kind(client: ScriptedClient) -> dict[str, list[int]]:
    """How many images each kind of call attached: priors, text steps, other steps, S_T and S_C."""

    def images(call: Any) -> int:
        content = call.messages[-1].content
        return sum(1 for part in content if not isinstance(part, str)) if isinstance(content, list) else 0

    by_kind: dict[str, list[int]] = {}
    for call in client.calls:
        prompt = call.prompt
        kind = ("prior" if "The likelihoods are" in prompt else "trajectory score" if "correctness score is <" in prompt
                else "confidence score" if "reliability score is <" in prompt
                else "text step" if "Finish[TEXT REFUTE]" in prompt else "other step")
        by_kind.setdefault(kind, []).append(images(call))
    return by_kind


async def test_on_a_vision_backend_every_call_of_the_papers_search_sees_the_image() -> None:
    client = ScriptedClient(scenario_script(confidence=lambda prompt: 6), vision=True)
    pool = BackendPool()
    pool.add(scripted_backend(client, name="scripted"))
    await run_sample(tree_config(iterations=3), POST, pool, backend="scripted", searchers={"wikipedia": DictSearcher()})
    by_kind = images_by_kind(client)
    assert set(by_kind) == {"prior", "text step", "other step", "trajectory score", "confidence score"}
    assert all(set(counts) == {1} for counts in by_kind.values()), by_kind
    assert not any("not shown here" in c.prompt for c in client.calls)


async def test_the_lean_search_keeps_the_image_from_the_text_step_and_the_scores() -> None:
    client = ScriptedClient(scenario_script(confidence=lambda prompt: 6), vision=True)
    pool = BackendPool()
    pool.add(scripted_backend(client, name="scripted"))
    lean = load_config("t2agent-lean")
    await run_sample(lean, POST, pool, backend="scripted", searchers={"wikipedia": DictSearcher()})
    by_kind = images_by_kind(client)
    assert by_kind["prior"] == [1] and set(by_kind["other step"]) == {1}
    assert set(by_kind["text step"]) == {0} and set(by_kind["confidence score"]) == {0}
    text_step = next(c.prompt for c in client.calls if "Finish[TEXT REFUTE]" in c.prompt)
    assert "not shown here" in text_step


async def test_every_scripted_run_stays_within_the_call_bound() -> None:
    import random

    def step(call: StepCall) -> str:
        rng = random.Random(f"{call.check}|{call.k}|{call.seed}")
        answers = {"text": ("TEXT REFUTE", "TEXT SUPPORT"), "image": ("IMAGE REFUTE", "IMAGE SUPPORT"),
                   "cross_modal": ("MISMATCH", "MATCH")}[call.check]
        if not call.must_finish and rng.random() < 0.6:
            return f"Thought {call.k}: Look.\nAction {call.k}: {rng.choice(['Wikipedia', 'Google', 'Detect', 'VQA'])}[x{call.seed}]"
        return f"Thought {call.k}: Done {call.seed}.\nAction {call.k}: Finish[{rng.choice(answers)}]"

    config = tree_config()
    for post in range(8):
        script = scenario_script(step=step, trajectory=lambda p: random.Random(p).randint(1, 10),
                                 confidence=lambda p: random.Random(p + "c").randint(1, 10))
        sample = POST.model_copy(update={"id": f"post-{post}", "text": f"{POST.text} ({post})"})
        verdict, _, _ = await run_tree(script, config, sample=sample)
        assert verdict.accounting.model_calls <= config.bound(), "a text-only backend makes no tool calls"
        assert verdict.diagnostics.iterations <= config.k
