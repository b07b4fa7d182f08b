"""The live line under a running debate: who is thinking, which turn of how many, for how long.

On a CPU a turn of the embedded model takes from seconds to minutes, and a command that prints
nothing for that long looks hung. The line is drawn on stderr while a terminal shows it, and
rewritten four times a second from the calls' own phases (:class:`~m3d_agents.backends.metering.CallEvent`):
a call that waits for the model's single slot says so, one that is being answered counts its
seconds. Nothing is drawn into a pipe or a file, where a moving line would only be noise.
"""

from __future__ import annotations

import time
from typing import Any, Callable

from rich.console import Console
from rich.live import Live
from rich.spinner import Spinner
from rich.text import Text

from debates.strategy import StrategyConfig
from m3d_agents.backends.metering import CallEvent
from m3d_agents.verdict import TranscriptTurn


def most_turns(config: StrategyConfig) -> tuple[int | None, str]:
    """How many turns of the whole debate (every seat's; or, for a strategy without turns, model calls) one post can
    take at most, and the words for them. A seat's own count (a person's screen says "your turn 1 of at most 3")
    is another number, so each says which it counts."""
    turns = config.most_turns()
    if turns is not None:
        return turns, "debate turn"
    budget = config.call_budget()
    return (budget.calls if budget is not None else None), "model call"


class ThinkingLine:
    """Follows a run's calls and finished turns, and draws one line about the call in progress."""

    def __init__(self, console: Console, config: StrategyConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.console = console
        self.total, self.unit = most_turns(config)
        self.turns_done = 0
        self.calls_started = 0
        self.active: dict[tuple[str, str], CallEvent] = {}
        self.clock = clock
        self._live: Live | None = None

    def observe(self, event: CallEvent) -> None:
        """A call's phase changed (the ledger's observer)."""
        key = (event.agent, event.role)
        if event.phase == "done":
            self.active.pop(key, None)
        else:
            if event.phase == "waiting":
                self.calls_started += 1
            self.active[key] = event

    def turn_finished(self, turn: TranscriptTurn) -> None:
        self.turns_done += 1

    def line(self) -> str:
        """The current line: the latest call being answered (else the latest waiting one), or nothing."""
        if not self.active:
            return ""
        answering = [e for e in self.active.values() if e.phase == "answering"]
        event = max(answering or self.active.values(), key=lambda e: e.at)
        done = self.turns_done if self.unit == "debate turn" else self.calls_started - 1
        position = f"{self.unit} {done + 1}" + (f" of at most {self.total}" if self.total else "")
        doing = "is thinking" if event.phase == "answering" else "waits for the model"
        who = event.agent if event.role in ("", event.agent) else f"{event.agent} ({event.role})"
        return f"{who} {doing} · {position} · {self.clock() - event.at:.0f} s"

    def __rich__(self) -> Any:
        text = self.line()
        return Spinner("dots", Text(text)) if text else Text("")

    def __enter__(self) -> "ThinkingLine":
        if self.console.is_terminal:
            self._live = Live(self, console=self.console, refresh_per_second=4, transient=True, redirect_stdout=True)
            self._live.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.stop()
            self._live = None
