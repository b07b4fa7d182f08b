"""The logic-consistency check that the text critic is given as its evidence.

It runs the logic-check tool (:mod:`m3d_agents.tools.analysis.logic_check`) once per sample, on the
tool's own backend when the run gives it one (``tools: {logic_check: {backend: ...}}``; AgentM3D runs
it on Qwen3-4B), else on the critic's own metered client, and shares the report with every critique
of that sample's text answers. When the model gives no usable report, the critic is told so instead of being handed an
invented one.
"""

from __future__ import annotations

from debates.debate_engine.turn_policy import TurnContext
from m3d_agents.backends.transports.schemas import structured_create_args
from m3d_agents.backends.metering import MeteredClient
from m3d_agents.tools.analysis.logic_check import LogicVerdict, run_logic_check

_KEY = "logic_check"


async def logic_consistency_report(client: MeteredClient, context: TurnContext, retries: int) -> str:
    turn_state = context.turn_state
    async with turn_state.lock(_KEY):
        if _KEY not in turn_state.cache:
            own = context.tools.setup.backends.get(_KEY) if context.tools is not None else None
            checker = (own.view(client.ledger, agent=_KEY, role="critique") if own is not None
                       else client.with_role("critique", agent=_KEY))
            create = structured_create_args(checker.model_info, LogicVerdict, strict=False)
            create.setdefault("extra_create_args", {})["temperature"] = 0.0
            result = await run_logic_check(context.prepared.sample.text, checker, create, retries=retries)
            turn_state.cache[_KEY] = result.for_agents()
        return str(turn_state.cache[_KEY])
