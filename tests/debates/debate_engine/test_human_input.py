"""A person's seat fed from code: a debate that is cancelled while it waits for the person stops at once."""

from __future__ import annotations

import asyncio

from debates.debate_engine.human_input import QueueInput
from debates.session import run_sample
from m3d_agents.sample import Sample
from tests.support.runs import judged_responder, scripted_pool_factory


async def test_a_debate_waiting_for_a_person_who_left_is_cancelled_at_once() -> None:
    factory, clients = scripted_pool_factory(judged_responder)
    pool = factory()
    person = QueueInput()
    debate = asyncio.create_task(run_sample("judged", Sample(text="Storm clouds over the harbour"), pool, backend="scripted",
                                            human_seats={"judge": person}))
    prompt = await asyncio.wait_for(person.prompts.get(), 10)
    assert "You are judge" in prompt
    debate.cancel()
    done, _ = await asyncio.wait({debate}, timeout=5)
    assert done == {debate} and debate.cancelled()
    assert len(clients[0].calls) == 4  # the debaters' turns; nothing more after the cancellation
    await pool.close()


async def test_answers_put_in_reach_the_waiting_seat() -> None:
    person = QueueInput()
    waiting = asyncio.create_task(person("What do you say?"))
    assert await person.prompts.get() == "What do you say?"
    person.put("FINAL ANSWER: fake")
    assert await asyncio.wait_for(waiting, 5) == "FINAL ANSWER: fake"
