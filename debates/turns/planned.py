"""The planning agent and turn policy ``planned``: a single pass for easy posts, best-of-N for hard ones.

The planner is asked once per sample; every seat of that sample then follows the same decision,
which lives in the per-sample turn-policy state. When its answer cannot be read, best-of-N is used:
spending more calls is the safe side of an unknown difficulty, and the error is reported.
"""

from __future__ import annotations

from typing import TypeVar

from autogen_core.models import SystemMessage, UserMessage

import prompts
from debates.turns.best_of_n import BestOfN
from debates.debate_engine.config import BestOfNSettings
from debates.debate_engine.turn_state import PlanDecision
from debates.debate_engine.turn_policy import TURN_POLICIES, TurnContext, TurnRequest
from debates.turns.single import SinglePass
from m3d_agents.media.post_content import described_images, user_content
from m3d_agents.asking import Answer, ask
from m3d_agents.backends.metering import MeteredClient
from m3d_agents.grammars import bon_level
from m3d_agents.parsing import parse_bon_level

T = TypeVar("T")


async def ask_planner(client: MeteredClient, context: TurnContext, retries: int) -> PlanDecision:
    prepared = context.prepared
    # The planner uses no tools: it sees the image itself, or on a text-only backend the shared
    # description (OCR and metadata), never the forensic report.
    images = described_images(prepared, context.vision, descriptions=False)
    task = prompts.render("turns/planner_task", text=prepared.sample.text, image_context=images)
    answer = await ask(
        client.with_role("planner", agent="planner"),
        [SystemMessage(content=prompts.load("turns/planner_system")), UserMessage(content=user_content(task, prepared, context.vision), source="user")],
        parse_bon_level,
        retries=retries,
        create_kwargs={"extra_create_args": {"temperature": 0.0, **bon_level().create_args()}},
    )
    if answer.value is None:
        return PlanDecision(level=1, text=answer.text, error=f"unreadable plan, best-of-N used: {answer.error}")
    return PlanDecision(level=answer.value, text=answer.text)


async def plan_for_sample(client: MeteredClient, context: TurnContext, retries: int) -> PlanDecision:
    turn_state = context.turn_state
    async with turn_state.lock("plan"):
        if turn_state.plan is None:
            turn_state.plan = await ask_planner(client, context, retries)
        return turn_state.plan


class Planned:
    def __init__(self, config: BestOfNSettings, best_of_n: BestOfN | None = None) -> None:
        self.single = SinglePass()
        self.best_of_n = best_of_n or BestOfN(config)

    async def produce(self, request: TurnRequest[T]) -> Answer[T]:
        plan = await plan_for_sample(request.client, request.context, request.retries)
        policy = self.best_of_n if plan.level == 1 else self.single
        if plan.level != 1:
            request.context.turn_state.single_pass_turns += 1
        return await policy.produce(request)


TURN_POLICIES.add("planned", lambda config: Planned(config), "the planner picks a single pass or best-of-N per sample")
