"""The AgentFact controller, table-driven and model-free: each scenario scripts what every turn yields and
asserts the exact sequence of next speakers, the stop reason and the step count.

The turns are applied with the same board operations the participants use (plans, queries,
retrieval, screening, judgements), with synthetic outcomes instead of model answers.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import pytest

from debates.strategies.agentfact.board import SCREENED_OUT, Board, Judgement
from debates.strategies.agentfact.policy import advance
from debates.strategies.agentfact.schemas import BackgroundNeed, Plan, SentenceToCheck
from debates.strategies.agentfact.config import AgentFactConfig
from debates.strategies.agentfact.views import strategist_task
from debates.config_loader import parse_config
from m3d_agents.errors import InputError
from m3d_agents.evidence import Evidence

ALL = ["strategist", "retriever", "visual_analyst", "screener", "reasoner", "explainer"]
SP, TR, IR, RT, RA, EX = "strategist", "retriever", "visual_analyst", "screener", "reasoner", "explainer"
BOTH = f"{SP}+{IR}"


CODE: dict[str, Any] = {"stop_when": "at_least", "screener_stops": True, "reason_after": "grown_pool", "step_turns": "all"}
"""The public code's loop (agentfact-code): stop at 4, the screener may stop, no reasoner after the first
screening, retriever turns count as steps."""


def config(roles: list[str] = ALL, **settings: Any) -> AgentFactConfig:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return AgentFactConfig(name="t", seats=[{"role": r} for r in roles], **settings)  # type: ignore[misc]


def code(roles: list[str] = ALL, **settings: Any) -> AgentFactConfig:
    return config(roles, **CODE, **settings)


@dataclass
class Script:
    """What each turn yields, in order; a list runs out into the last entry's default."""

    plans: list[tuple[int, int]] = field(default_factory=lambda: [(1, 2)])
    rounds: list[int] = field(default_factory=list)
    """New evidence items per retrieval round."""
    screens: list[tuple[Any, str, int]] = field(default_factory=list)
    """(which batch items to cite: 'all', 'none', 'unreadable' or a list of positions, label, sufficiency)."""
    reasons: list[tuple[str, int]] = field(default_factory=list)
    queries_per_plan: int | None = None


def plan(number: int, sentences: int, needs: int) -> Plan:
    return Plan(
        validation_list=[SentenceToCheck(sentence=f"plan {number} sentence {i}", explanation="") for i in range(sentences)],
        search_list=[BackgroundNeed(information_needed=f"plan {number} need {i}") for i in range(needs)],
    )


class Simulation:
    def __init__(self, cfg: AgentFactConfig, script: Script, has_images: bool = True, gold: int = 0) -> None:
        evidence = [Evidence(id=f"E{i}", kind="corpus", text=f"gold item {i}") for i in range(1, gold + 1)]
        self.board = Board.start(cfg, "The bridge collapsed on its opening day.", has_images=has_images, gold=evidence)
        self.script = script
        self.items = 0
        self.strategist_prompts: list[str] = []

    def run(self, limit: int = 60) -> list[str]:
        order = []
        while (speakers := advance(self.board)) is not None:
            order.append("+".join(speakers))
            for speaker in speakers:
                getattr(self, speaker)()
                self.board.finish_turn(speaker)  # type: ignore[arg-type]
            assert len(order) < limit, f"no end in sight: {order}"
        return order

    def strategist(self) -> None:
        self.strategist_prompts.append(strategist_task(self.board, "the post"))
        sentences, needs = self.script.plans.pop(0) if self.script.plans else (0, 0)
        self.board.apply_plan(plan(len(self.board.plans) + 1, sentences, needs))

    def visual_analyst(self) -> None:
        self.board.add_image_finding(Evidence(kind="reverse_image", url="https://news.example/a", text="page"), "same_source", "n/a")

    def retriever(self) -> None:
        if not self.board.queue and not self.board.config.has("strategist"):
            self.board.requeue_claim()
        needs = self.board.pending_needs()
        if needs:
            self.board.write_queries(needs, [f"query {n.plan} for {n.text}" for n in needs])
        if not self.board.queue:
            return
        self.board.pop_query()
        count = self.script.rounds.pop(0) if self.script.rounds else 0
        found = []
        for _ in range(count):
            self.items += 1
            found.append(Evidence(kind="web_page", url=f"https://news.example/{self.items}", text=f"page {self.items}"))
        self.board.add_retrieved(found)

    def screener(self) -> None:
        batch = self.board.take_batch()
        cite, label, sufficiency = self.script.screens.pop(0) if self.script.screens else ("all", "unproven", 2)
        if cite == "unreadable":
            self.board.screen(batch, None)
            self.board.record_judgement(None)
            return
        chosen = batch if cite == "all" else [] if cite == "none" else [batch[i] for i in cite]
        self.board.screen(batch, set(chosen))
        self.board.record_judgement(Judgement("screener", label, sufficiency, chosen, {}))

    def reasoner(self) -> None:
        if not self.board.config.has("screener"):
            self.board.unscreened.clear()
        label, sufficiency = self.script.reasons.pop(0) if self.script.reasons else ("unproven", 2)
        self.board.record_judgement(Judgement("reasoner", label, sufficiency, list(self.board.eu), {}))

    def explainer(self) -> None:
        pass


SCENARIOS: list[tuple[str, AgentFactConfig, Script, dict[str, Any], list[str], str, int]] = [
    # The paper's loop (the agentfact defaults).
    (
        "paper: a confident screener does not end the run; the reasoner it calls does",
        config(), Script(plans=[(1, 2)], rounds=[3], screens=[([0, 1], "false", 5)], reasons=[("false", 5)]), {},
        [BOTH, TR, RT, RA, EX], "confident", 2,
    ),
    (
        "paper: sufficiency 4 does not exceed 4, so the loop goes on",
        config(max_plans=1), Script(plans=[(2, 0)], rounds=[3, 3], screens=[("all", "false", 4), ("all", "false", 4)],
                                    reasons=[("false", 4), ("false", 5)]), {},
        [BOTH, TR, RT, RA, TR, RT, RA, EX], "confident", 4,
    ),
    (
        "paper: the reasoner follows every growth of the useful pool, the first included, and no screening that keeps nothing",
        config(max_plans=1), Script(plans=[(3, 0)], rounds=[3, 3, 3],
                                    screens=[("all", "unproven", 2), ("none", "unproven", 2), ([0], "unproven", 2)],
                                    reasons=[("unproven", 2), ("unproven", 3)]), {},
        [BOTH, TR, RT, RA, TR, RT, TR, RT, RA, EX], "plans exhausted", 5,
    ),
    (
        "paper: retriever turns are not steps, so a six-query plan leaves room for a replan",
        config(max_steps=4, max_plans=2), Script(plans=[(3, 3), (1, 0)], rounds=[0, 0, 0, 0, 0, 1, 1],
                                                 screens=[("all", "unproven", 2), ("all", "unproven", 2)],
                                                 reasons=[("unproven", 2), ("unproven", 3)]), {},
        [BOTH, TR, TR, TR, TR, TR, TR, RT, RA, SP, TR, RT, RA, EX], "step limit", 4,
    ),
    (
        "paper: without a reasoner seat the screener is the only judge and may stop",
        config([SP, TR, IR, RT, EX]), Script(plans=[(1, 0)], rounds=[3], screens=[("all", "false", 5)]), {},
        [BOTH, TR, RT, EX], "confident", 1,
    ),
    (
        "paper: without the strategist the claim gets new queries, round after round, up to max_plans",
        config([TR, IR, RT, RA, EX]), Script(plans=[], rounds=[3, 0, 0], screens=[("all", "unproven", 3)]), {},
        [IR, TR, RT, RA, TR, TR, EX], "plans exhausted", 2,
    ),
    # The public code's loop (agentfact-code).
    (
        "1 confident after the first screening: explain at once",
        code(), Script(plans=[(1, 2)], rounds=[3], screens=[([0, 1], "false", 4)]), {},
        [BOTH, TR, RT, EX], "confident", 2,
    ),
    (
        "2 threshold 3: two retrievals before screening",
        code(), Script(plans=[(1, 2)], rounds=[2, 2], screens=[("all", "true", 5)]), {},
        [BOTH, TR, TR, RT, EX], "confident", 3,
    ),
    (
        "3 thirteen unscreened items: a batch of ten, then the other three",
        code(), Script(plans=[(1, 0)], rounds=[13], screens=[("all", "unproven", 2), ("all", "false", 5)]), {},
        [BOTH, TR, RT, RT, EX], "confident", 3,
    ),
    (
        "4 unproven with sufficiency 5 does not stop",
        code(), Script(plans=[(1, 1)], rounds=[3, 3], screens=[("all", "unproven", 5), ("all", "unproven", 3)],
                         reasons=[("true", 4)]), {},
        [BOTH, TR, RT, TR, RT, RA, EX], "confident", 5,
    ),
    (
        "5 sufficiency 3 is under 4: the loop goes on",
        code(), Script(plans=[(2, 0)], rounds=[3, 1], screens=[("all", "false", 3), ("all", "false", 3)],
                         reasons=[("false", 4)]), {},
        [BOTH, TR, RT, TR, RT, RA, EX], "confident", 5,
    ),
    (
        "6 the queue runs out: replan, then explain when nothing more comes",
        code(max_plans=2), Script(plans=[(1, 0), (1, 0)], rounds=[1, 0], screens=[("all", "unproven", 2)]), {},
        [BOTH, TR, RT, SP, TR, EX], "plans exhausted", 3,
    ),
    (
        "7 max_plans reached: explain with 'plans exhausted'",
        code(max_plans=1), Script(plans=[(0, 1)], rounds=[0]), {},
        [BOTH, TR, EX], "plans exhausted", 1,
    ),
    (
        "8 step limit 12, with the screener at step 11 while evidence waits",
        code(max_steps=12, max_plans=1),
        Script(plans=[(6, 6)], rounds=[3, 3, 3, 3, 0, 0, 1], screens=[("none", "unproven", 1)] * 5), {},
        [BOTH, TR, RT, TR, RT, TR, RT, TR, RT, TR, TR, TR, RT, EX], "step limit", 12,
    ),
    (
        "9a closed book: plan, reason once, explain",
        code([SP, RA, EX], setting="closed_book"), Script(plans=[(1, 1)]), {},
        [SP, RA, EX], "single pass", 1,
    ),
    (
        "9b evidence bounded: plan, reason once over the gold evidence, explain",
        code([SP, RA, EX], setting="evidence_bounded"), Script(plans=[(1, 1)]), {"gold": 3},
        [SP, RA, EX], "single pass", 1,
    ),
    (
        "10a without the strategist: the claim is the only need, asked again until max_plans",
        code([TR, IR, RT, RA, EX], max_plans=1), Script(plans=[], rounds=[3], screens=[("all", "unproven", 3)]), {},
        [IR, TR, RT, EX], "plans exhausted", 2,
    ),
    (
        "10b without the visual analyst: the strategist starts alone",
        code([SP, TR, RT, RA, EX]), Script(plans=[(1, 0)], rounds=[3], screens=[("all", "false", 4)]), {},
        [SP, TR, RT, EX], "confident", 2,
    ),
    (
        "10c without the retriever: reason on the plan and the image findings",
        code([SP, IR, RT, RA, EX]), Script(plans=[(1, 2)]), {},
        [BOTH, RA, EX], "no text retrieval", 1,
    ),
    (
        "10d without the screener: the reasoner reads each new batch",
        code([SP, TR, IR, RA, EX]), Script(plans=[(1, 1)], rounds=[1, 2], reasons=[("false", 4)]), {},
        [BOTH, TR, TR, RA, EX], "confident", 3,
    ),
    (
        "11 a plan with two empty lists cannot loop",
        code(max_plans=3, search_post_if_plan_empty=False), Script(plans=[(0, 0), (0, 0), (0, 0)]), {},
        [BOTH, SP, SP, EX], "plans exhausted", 0,
    ),
    (
        "11b an empty first plan searches the post itself, once",
        code(max_plans=3), Script(plans=[(0, 0), (0, 0), (0, 0)], rounds=[0]), {},
        [BOTH, TR, SP, SP, EX], "plans exhausted", 1,
    ),
    (
        "an image-free post never calls the visual analyst",
        code(max_plans=1, search_post_if_plan_empty=False), Script(plans=[(0, 0)]), {"has_images": False},
        [SP, EX], "plans exhausted", 0,
    ),
    (
        "an unreadable screening lets its batch through and the loop goes on",
        code(max_plans=1), Script(plans=[(1, 1)], rounds=[3, 1], screens=[("unreadable", "", 0), ("all", "false", 2)],
                                    reasons=[("false", 5)]), {},
        [BOTH, TR, RT, TR, RT, RA, EX], "confident", 5,
    ),
    (
        "an evidence cap ends the run after the reasoner",
        code(max_useful=3), Script(plans=[(2, 0)], rounds=[3, 3], screens=[("all", "unproven", 2), ("all", "unproven", 2)],
                                     reasons=[("unproven", 3)]), {},
        [BOTH, TR, RT, TR, RT, RA, EX], "evidence cap", 5,
    ),
]


@pytest.mark.parametrize(
    ("cfg", "script", "options", "expected", "reason", "steps"),
    [pytest.param(*row[1:], id=row[0]) for row in SCENARIOS],
)
def test_the_controller_calls_speakers_in_the_expected_order(
    cfg: AgentFactConfig, script: Script, options: dict[str, Any], expected: list[str], reason: str, steps: int
) -> None:
    simulation = Simulation(cfg, script, **options)
    assert simulation.run() == expected
    assert simulation.board.stop_reason == reason
    assert simulation.board.steps == steps


def test_a_replan_is_shown_the_latest_judgement_and_the_queries_already_run() -> None:
    simulation = Simulation(config(max_plans=2), Script(plans=[(1, 0), (0, 0)], rounds=[1], screens=[("all", "unproven", 2)]))
    simulation.run()
    first, second = simulation.strategist_prompts
    assert "previous plan" not in first
    assert "reasoner: label unproven, sufficiency 2/5, evidence used: E1" in second, "the latest judgement, the reasoner's"
    assert '"plan 1 sentence 0"' in second


def test_display_ids_are_never_reused_across_replans() -> None:
    simulation = Simulation(
        config(max_plans=3), Script(plans=[(1, 0), (1, 0), (1, 0)], rounds=[2, 2, 2], screens=[([0], "unproven", 2)] * 3)
    )
    simulation.run()
    board = simulation.board
    assert list(board.er) == ["E1", "E2", "E3", "E4", "E5", "E6"]
    assert board.eu == ["E1", "E3", "E5"]
    assert [board.er[d].kept for d in ("E2", "E4", "E6")] == [False] * 3
    assert all(board.er[d].reason == SCREENED_OUT for d in ("E2", "E4", "E6"))


def test_gold_ids_are_kept_and_new_ids_follow_them() -> None:
    gold = [Evidence(id="E2", kind="corpus", text="a"), Evidence(id="E5", kind="corpus", text="b")]
    board = Board.start(config(), "claim", has_images=False, gold=gold)
    assert board.eu == ["E2", "E5"]
    assert board.add_retrieved([Evidence(kind="web_page", url="https://x.example/1", text="new")]) == ["E6"]


def test_a_page_seen_before_is_not_added_again() -> None:
    board = Board.start(config(), "claim", has_images=False)
    page = Evidence(kind="web_page", url="https://x.example/1", text="text")
    assert board.add_retrieved([page]) == ["E1"]
    again = Evidence(kind="web_page", url="https://x.example/1", text="another snippet of it")
    same_text = Evidence(kind="answer", url="https://y.example/2", text=" text ")
    passage = Evidence(kind="answer", url="https://x.example/1", text="a different passage of the page")
    dropped = Evidence(kind="web_page", url="https://z.example/3", text="leaked", kept=False)
    assert board.add_retrieved([again, same_text, passage, dropped]) == ["E2"]


def test_queries_already_run_are_not_queued_again() -> None:
    board = Board.start(config(), "claim", has_images=False)
    board.apply_plan(Plan(validation_list=[SentenceToCheck(sentence="The bridge fell.", explanation="")],
                          search_list=[BackgroundNeed(information_needed="opening date")]))
    board.pop_query()
    board.apply_plan(Plan(validation_list=[SentenceToCheck(sentence="the bridge  fell", explanation="")],
                          search_list=[BackgroundNeed(information_needed="opening date")]))
    assert [(q.text, q.kind) for q in board.queue] == [("opening date", "need")]
    board.write_queries(board.pending_needs(), ["The bridge fell", "bridge opening date 2023"])
    assert [(q.text, q.kind) for q in board.queue] == [("bridge opening date 2023", "query")]


def parse(data: dict[str, Any]) -> Any:
    return parse_config({"name": "t", "strategy": "agentfact", **data})


def test_configuration_validation() -> None:
    with pytest.raises(InputError, match="'explainer' appears 2 times"):
        parse({"seats": [{"role": "reasoner"}, {"role": "explainer"}, {"role": "explainer"}]})
    with pytest.raises(InputError, match="an explainer is required"):
        parse({"seats": [{"role": "reasoner"}]})
    with pytest.raises(InputError, match="a screener or a reasoner"):
        parse({"seats": [{"role": "strategist"}, {"role": "explainer"}]})
    with pytest.raises(InputError, match="protocol"):
        parse({"seats": [{"role": "reasoner"}, {"role": "explainer"}], "protocol": "async"})
    with pytest.raises(InputError):
        parse_config({"name": "t", "protocol": "async", "seats": [{"name": "a", "role": "strategist"}], "setting": "open_web"})
    with pytest.warns(UserWarning, match="retriever seat"):
        parse({"setting": "closed_book", "seats": [{"role": "retriever"}, {"role": "reasoner"}, {"role": "explainer"}]})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parse({"setting": "open_web", "seats": [{"role": "retriever"}, {"role": "reasoner"}, {"role": "explainer"}]})
