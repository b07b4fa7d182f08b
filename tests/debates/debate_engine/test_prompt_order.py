"""Prompts put what is fixed for a sample first and what changes last, so a server's prefix cache
reuses the system prompt, the post, the images, the evidence and the answer format of every call."""

from __future__ import annotations

import json
from typing import Any

from autogen_core import Image as AgentImage
from autogen_core.models import UserMessage

from debates.session import run_sample
from debates.config_loader import load_config
from debates.turns.critics import ImageCritic
from debates.debate_engine.turn_policy import TurnContext
from debates.debate_engine.turn_state import TurnPolicyState
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.media.images import prepare_sample
from tests.support.debate import SAMPLE, seat_pool
from tests.support.scripted import ScriptedClient, scripted_backend


def user_parts(messages: list[Any]) -> list[Any]:
    user = [m for m in messages if isinstance(m, UserMessage)][0]
    return user.content if isinstance(user.content, list) else [user.content]


async def test_a_debater_gets_post_images_and_answer_format_before_the_debate_so_far() -> None:
    labels = iter(["fake", "real"] * 10)

    def structured(_messages: object, _kwargs: object) -> str:
        return json.dumps({"argument": "It looks staged.", "answer": next(labels), "confidence": 0.6})

    debate = load_config("async").model_copy(update={"structured_turns": True})  # JSON turns, as our variants ask
    names = [seat.name for seat in debate.seats]
    config, pool, clients = seat_pool(debate, {n: structured for n in names}, vision=True, structured_output=True)
    await run_sample(config, SAMPLE, pool)
    calls = [call for client in clients.values() for call in client.calls]
    assert len(calls) == len(names) * config.max_rounds
    prefixes = set()
    for call in calls:
        parts = user_parts(call.messages)
        kinds = ["image" if isinstance(p, AgentImage) else "hint" if "Reply with a JSON object" in p
                 else "turn" if p.startswith("Round ") else "post" for p in parts]
        assert kinds == ["post", "image", "hint", "turn"], kinds
        prefixes.add((call.messages[0].content, parts[0], parts[2]))
    assert len(prefixes) == 1, "every debater call of the sample starts with the same text"


async def test_the_image_critic_gets_the_images_before_the_candidate_and_the_same_text_otherwise() -> None:
    client = ScriptedClient(["The score is 7"] * 4, vision=True)
    backend = scripted_backend(client)
    prepared = prepare_sample(SAMPLE)
    seat = load_config("agentm3d").seats[1]
    context = TurnContext(seat, load_config("agentm3d"), prepared, TurnPolicyState(), True, 1)
    critic = ImageCritic(lambda image: "no traces of editing")
    for candidate in ("First answer: Finish[IMAGE SUPPORT]", "Second answer: Finish[IMAGE REFUTE]"):
        await critic.critique(backend.view(UsageLedger(), "image_agent", "candidate"), candidate, context, retries=0)
    first, second = (user_parts(call.messages) for call in client.calls)
    assert [type(p) for p in first] == [str, AgentImage, str]
    assert first[0] == second[0] and "no traces of editing" in first[0] and "First answer" not in first[0]
    assert "First answer" in first[2] and "Second answer" in second[2]

    text_only = ScriptedClient(["The score is 7"])
    await critic.critique(scripted_backend(text_only).view(UsageLedger(), "image_agent", "candidate"), "An answer",
                          TurnContext(seat, load_config("agentm3d"), prepared, TurnPolicyState(), False, 1), retries=0)
    (plain,) = user_parts(text_only.calls[0].messages)
    assert plain.index("no traces of editing") < plain.index("An answer")
