"""The live line of m3d debate: who is thinking, which turn of at most how many, for how long; a call waiting for
the single slot says so; nothing is drawn into a pipe."""

from __future__ import annotations

import io

from rich.console import Console

from debates.cli.thinking import ThinkingLine
from debates.config_loader import load_config
from m3d_agents.backends.metering import CallEvent
from m3d_agents.verdict import TranscriptTurn


def test_the_line_names_the_seat_its_turn_and_its_seconds() -> None:
    now = [100.0]
    line = ThinkingLine(Console(file=io.StringIO()), load_config("judged"), clock=lambda: now[0])
    assert line.line() == ""
    line.observe(CallEvent("prosecutor", "debater", "waiting", 100.0))
    assert line.line() == "prosecutor (debater) waits for the model · debate turn 1 of at most 5 · 0 s"
    line.observe(CallEvent("prosecutor", "debater", "answering", 101.0))
    now[0] = 113.4
    assert line.line() == "prosecutor (debater) is thinking · debate turn 1 of at most 5 · 12 s"
    line.observe(CallEvent("prosecutor", "debater", "done", 114.0))
    line.turn_finished(TranscriptTurn(speaker="prosecutor", role="debater", round=1, text="..."))
    line.observe(CallEvent("defender", "debater", "answering", 114.0))
    now[0] = 120.0
    assert line.line() == "defender (debater) is thinking · debate turn 2 of at most 5 · 6 s"


def test_a_strategy_without_turns_counts_model_calls() -> None:
    line = ThinkingLine(Console(file=io.StringIO()), load_config("t2agent"), clock=lambda: 5.0)
    line.observe(CallEvent("text", "step", "waiting", 5.0))
    assert line.line().startswith("text (step) waits for the model · model call 1")


def test_nothing_is_drawn_into_a_pipe() -> None:
    piped = io.StringIO()
    with ThinkingLine(Console(file=piped, force_terminal=False), load_config("async")) as line:
        line.observe(CallEvent("agent_a", "debater", "answering", 0.0))
    assert piped.getvalue() == ""
