"""The notebook helpers: streamed turns, verdicts, and a person's seat through widgets, with scripted agents."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import pytest

from m3d_agents.errors import BackendError
from autogen_agentchat.messages import TextMessage

from debates.config_loader import load_config
from debates.session import run_sample
from debates.debate_engine.state import DebateState
from m3d_agents.errors import InputError
from m3d_agents.labels import get_taxonomy
from m3d_agents.verdict import Verdict
from tests.support.debate import SAMPLE, answer, prompts_of, seat_pool

widgets = pytest.importorskip("ipywidgets")
notebook = pytest.importorskip("debates.ui.notebook")


class Collected:
    """Stands in for an ``ipywidgets.Output``: keeps what would be shown."""

    def __init__(self) -> None:
        self.html: list[str] = []

    def append_display_data(self, obj: Any) -> None:
        self.html.append(obj.data)


async def wait_for(condition: Any, timeout_s: float = 10.0) -> None:
    async with asyncio.timeout(timeout_s):
        while not condition():
            await asyncio.sleep(0.01)


async def test_a_person_debates_through_the_widget_and_the_agents_answer_their_argument() -> None:
    config = load_config("async-three").model_copy(update={"max_rounds": 2})
    config, pool, clients = seat_pool(config, {
        "agent_b": [answer("real", "B1"), answer("fake", "B2 you convinced me")],
        "agent_c": [answer("real", "C1"), answer("real", "C2")],
    })
    person = notebook.WidgetInput()
    shown = Collected()
    view = notebook.TranscriptView(people=["agent_a"], output=shown)
    task = notebook.run_in_background(
        run_sample(config, SAMPLE, pool, human_seats={"agent_a": person}, on_message=view), view
    )

    await wait_for(lambda: not person.send.disabled)
    assert "Round 1" in person.screen.value and "Statue of Liberty" in person.screen.value
    person.send.click()  # an empty box is not sent
    assert "empty" in person.status.value and not person.send.disabled
    person.box.value = "The clouds are pasted in.\nFINAL ANSWER: fake"
    person.send.click()
    assert person.send.disabled and person.box.value == ""

    await wait_for(lambda: not person.send.disabled and person.turns == 2)
    assert "B1" in person.screen.value and "C1" in person.screen.value  # round 2 shows the agents' answers
    person.box.value = "Still fake: the shadows disagree.\nFINAL ANSWER: fake"
    person.send.click()
    verdict = await asyncio.wait_for(task, 10)

    for agent in ("agent_b", "agent_c"):  # in round 2 each agent is shown the person's latest argument
        assert "the shadows disagree" in prompts_of(clients[agent])[1]
    assert [t.stance for t in verdict.transcript if t.speaker == "agent_a"] == ["fake", "fake"]
    assert verdict.label == "fake" and verdict.diagnostics.decided_by == "majority"
    await asyncio.sleep(0)  # the done-callback shows the verdict
    assert sum("agent_a (you)" in h for h in shown.html) == 2
    assert sum("round " in h and "agent_b</b>" in h for h in shown.html) == 2
    assert "Verdict on post" in shown.html[-1] and ">fake</b>" in shown.html[-1]


async def test_a_failed_debate_is_shown_not_lost() -> None:
    config, pool, _ = seat_pool(load_config("async-three"), {})  # the scripted agents have no answers
    shown = Collected()
    view = notebook.TranscriptView(output=shown)
    task = notebook.run_in_background(run_sample(config, SAMPLE, pool, on_message=view), view)
    with pytest.raises(BackendError, match="ran out of answers"):
        await task
    await asyncio.sleep(0)
    assert "The debate failed" in shown.html[-1]


def test_model_text_is_escaped_and_unreadable_turns_say_why() -> None:
    config = load_config("async-three")
    state = DebateState(config=config, taxonomy=get_taxonomy("binary"))
    state.record("agent_b", "<script>alert(1)</script> no label here")
    html = notebook.turn_html(state.turns[0], state.taxonomy)
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "no readable answer" in html


def test_finished_turn_matches_the_message_not_only_the_last_speaker() -> None:
    state = DebateState(config=load_config("sync-three"), taxonomy=get_taxonomy("binary"))
    first = state.record("agent_a", answer("fake", "A"))
    state.record("agent_b", answer("real", "B"))
    assert state.finished_turn(TextMessage(content=answer("fake", "A"), source="agent_a")) is first
    assert state.finished_turn(TextMessage(content="not recorded", source="agent_a")) is None


def test_abstentions_show_their_reason() -> None:
    verdict = Verdict.abstain("p1", reason="no consensus and no majority", config="async", backend="local",
                              diagnostics={"rounds": 3, "wall_time_s": 1.0})
    assert "ABSTAINED" in notebook.verdict_html(verdict) and "no majority" in notebook.verdict_html(verdict)
    table = notebook.verdicts_table_html([verdict])
    assert "abstained" in table and "no consensus" in table


def test_backend_pool_names_unknown_backends_and_points_vllm_at_a_server() -> None:
    with pytest.raises(InputError, match="unknown backend 'gpu-box'"):
        notebook.backend_pool("gpu-box")
    pool = notebook.backend_pool("vllm", "http://10.0.0.5:8000/v1")
    assert pool.config("vllm").base_url == "http://10.0.0.5:8000/v1"


KERNEL_SETUP = """
import ipywidgets
from debates.config_loader import load_config
from debates.session import run_sample
from debates.ui.notebook import TranscriptView, WidgetInput, run_in_background
from tests.support.debate import SAMPLE, answer, seat_pool

config = load_config("judged").model_copy(update={"max_rounds": 1})
config, pool, clients = seat_pool(config, {"prosecutor": [answer("fake", "P")], "defender": [answer("real", "D")]})
person = WidgetInput()
view = TranscriptView(people=["judge"], output=ipywidgets.Output())
task = run_in_background(run_sample(config, SAMPLE, pool, human_seats={"judge": person}, on_message=view), view)
"""


@pytest.mark.notebook
def test_in_a_real_kernel_the_debate_waits_for_the_click_between_cells() -> None:
    """The cell that starts the debate returns at once; the person answers from a later message."""
    pytest.importorskip("ipykernel")
    from jupyter_client.manager import start_new_kernel

    from tests.support.paths import REPO

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    km, kc = start_new_kernel(kernel_name="python3", env=env, cwd=str(REPO))

    def run(code: str) -> str:
        printed: list[str] = []

        def hook(msg: dict[str, Any]) -> None:
            if msg["msg_type"] == "stream":
                printed.append(msg["content"]["text"])
            elif msg["msg_type"] == "error":
                printed.append("\n".join(msg["content"]["traceback"]))

        reply = kc.execute_interactive(code, timeout=60, output_hook=hook)
        assert reply["content"]["status"] == "ok", "".join(printed)
        return "".join(printed).strip()

    def poll(code: str, expected: str) -> None:
        deadline = time.monotonic() + 60
        while (seen := run(code)) != expected:
            assert time.monotonic() < deadline, f"still {seen!r}"
            time.sleep(0.1)

    try:
        run(KERNEL_SETUP)
        poll("print(person.turns, person.send.disabled)", "1 False")
        assert run("print('P I looked' in person.screen.value and 'D I looked' in person.screen.value)") == "True"
        run("person.box.value = 'The defender ignores the pasted clouds.\\nFINAL ANSWER: fake'; person.send.click()")
        poll("print(task.done())", "True")
        assert run("v = task.result(); print(v.label, v.diagnostics.decided_by)") == "fake judge"
        assert run("print(sum('Verdict on post' in o['data']['text/html'] for o in view.output.outputs))") == "1"
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_a_configuration_says_how_long_its_debate_runs_in_words() -> None:
    from debates.config_loader import load_config
    from debates.strategy import rounds_phrase

    assert rounds_phrase(load_config("async")) == "at most 3 rounds"  # type: ignore[arg-type]
    assert rounds_phrase(load_config("standard")) == "one turn per seat"  # type: ignore[arg-type]
