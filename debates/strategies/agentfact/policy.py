"""Who acts next in an AgentFact run: a pure function of the board, so every rule is tested on data alone.

No model picks the next speaker in AgentFact; the controller does, from the pools and counters:

1. an explanation ends the run; a pending "explain" calls the explainer;
2. first, the strategist and (open web, with an image) the visual analyst, together;
3. after a screener or reasoner turn, a judgement other than unproven whose sufficiency exceeds
   ``stop_confidence`` is confident enough to explain, when its author may stop the loop: the
   reasoner (R-A) always, the screener (R-T) only without a reasoner seat, since the paper's R-T
   selects evidence and gives no final judgement (paper line 268); otherwise a screening that grew
   the useful pool calls the reasoner over the whole pool (paper line 270);
4. the step limit explains; only the screener's and the reasoner's turns are steps (the paper's
   "reasoning steps", line 272);
5. closed-book and evidence-bounded runs reason once, then explain; so does a run with no retriever;
6. enough unscreened items (or an empty queue, or the last step) call the screener;
7. a query in the queue calls the retriever; an exhausted queue calls the strategist to replan,
   shown the latest judgement, until ``max_plans``; without a strategist (the w/o Agent-SP
   ablation) the claim goes back to the query writer for new queries, as many rounds; then the
   explainer.

The public code's rules (stop at 4, the screener may stop, no reasoner after the first screening,
retriever turns as steps) are settings (``stop_when``, ``screener_stops``, ``reason_after``,
``step_turns``) that ``agentfact-code`` sets. One choice of ours here: the step limit is checked
before the reasoner that follows a screening, so a run never takes more than ``max_steps`` steps.
"""

from __future__ import annotations

from dataclasses import dataclass

from debates.strategies.agentfact.board import Board


@dataclass(frozen=True)
class Step:
    """The next speakers, or None to stop; ``explain`` is why the explainer is called, when it is."""

    speakers: list[str] | None
    explain: str = ""


def explain(reason: str) -> Step:
    return Step(["explainer"], reason)


def next_step(board: Board) -> Step:
    config = board.config
    if board.explained:
        return Step(None)
    if board.must_explain:
        return Step(["explainer"], board.must_explain)
    if board.turns == 0:
        first = ["strategist"] if config.has("strategist") else []
        if config.has("visual_analyst") and config.setting == "open_web" and board.has_images:
            first.append("visual_analyst")
        if first:
            return Step(first)
    if board.last_role in ("screener", "reasoner"):
        judgement = board.last_judgement
        if judgement is not None and judgement.label != "unproven" and config.confident(judgement.sufficiency) \
                and config.can_stop(judgement.role):
            return explain("confident")
        if board.steps < config.max_steps and board.last_role == "screener" and board.eu_grew and config.has("reasoner") \
                and (config.reason_after == "every_growth" or not board.eu_was_empty):
            return Step(["reasoner"])
        if config.max_useful is not None and board.last_role == "reasoner" and len(board.eu) > config.max_useful:
            return explain("evidence cap")
    if board.steps >= config.max_steps:
        return explain("step limit")
    if config.setting != "open_web":
        return Step([config.judge()]) if board.judging_turns == 0 else explain("single pass")
    if not config.has("retriever"):
        return Step([config.judge()]) if board.judging_turns == 0 else explain("no text retrieval")
    if board.unscreened and (
        len(board.unscreened) >= config.screen_threshold or not board.queue or board.steps + 1 >= config.max_steps
    ):
        return Step([config.sifter()])
    if board.queue:
        return Step(["retriever"])
    if config.has("strategist") and len(board.plans) < config.max_plans:
        return Step(["strategist"])
    if not config.has("strategist") and board.query_rounds < config.max_plans:
        return Step(["retriever"])
    return explain("plans exhausted")


def advance(board: Board) -> list[str] | None:
    """The team's speaker policy: the next step, with a call to explain recorded on the board."""
    step = next_step(board)
    if step.explain and not board.must_explain:
        board.explain(step.explain)
    if step.speakers is None and not board.stop_reason:
        board.stop_reason = "explained"
    return step.speakers
