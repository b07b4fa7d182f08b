"""A logic-consistency check of a post's claim, which the text critic is given as its evidence.

It is a model call, made once per sample and shared by every critique of that sample's text
answers. When the model gives no usable report, the critic is told so instead of being handed
an invented one.
"""

from __future__ import annotations

from autogen_core.models import SystemMessage, UserMessage

import prompts
from debates.turns import TurnContext
from m3d_agents.asking import ask
from m3d_agents.backends.metering import MeteredClient
from m3d_agents.errors import ParseError
from m3d_agents.parsing import strip_reasoning

_KEY = "logic_check"


def _report(text: str) -> str:
    visible = strip_reasoning(text).strip()
    if len(visible) < 10:
        raise ParseError("logic report", "the report is empty or too short to say anything", text)
    return visible


async def logic_consistency_report(client: MeteredClient, context: TurnContext, retries: int) -> str:
    selector = context.selector
    async with selector.lock(_KEY):
        if _KEY not in selector.cache:
            answer = await ask(
                client.with_role("critique", agent="logic_check"),
                [
                    SystemMessage(content=prompts.load("logic_check_system")),
                    UserMessage(content=prompts.render("logic_check_task", text=context.prepared.sample.text), source="user"),
                ],
                _report,
                retries=retries,
                create_kwargs={"extra_create_args": {"temperature": 0.0}},
            )
            selector.cache[_KEY] = (
                answer.value if answer.value is not None else f"The logic-consistency check gave no usable report ({answer.error})."
            )
        return str(selector.cache[_KEY])
