"""Where a person's answers come from: the terminal, or a queue that a notebook or a web page fills.

An input function takes the prompt the person should read and returns their answer. It may be a
plain function or a coroutine function (AutoGen's ``UserProxyAgent`` accepts both), so a person can
sit in any seat from any front end; the person then writes the answer lines (``FINAL ANSWER:``,
``CONFIDENCE:``) themselves, as a model would.

A front end that can ask better offers :meth:`TurnInput.ask_turn` instead: it is given the turn as
a :class:`PersonTurn` (the screen, the labels to choose from, the post's images) and returns a
:class:`PersonAnswer` (the argument, the label, the confidence), and the seat writes the answer
lines from it. The terminal does (:class:`TerminalSeat`): the argument is typed freely and ends
with a blank line, the label is a choice, the confidence a number.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Awaitable, Callable, Optional, Protocol, Union, runtime_checkable

from autogen_core import CancellationToken

SyncInput = Callable[[str], str]
AsyncInput = Callable[[str, Optional[CancellationToken]], Awaitable[str]]
InputFunc = Union[SyncInput, AsyncInput]


@dataclass(frozen=True)
class PersonTurn:
    """One turn as a person is asked it."""

    screen: str
    """Everything to read first: who they are, the post, what the other seats said, what to do."""
    labels: tuple[str, ...] | None
    """The labels to choose from; None where the seat argues without answering (a judged debate's debater)."""
    images: tuple[Path, ...] = ()
    """The post's image files the person may open (none where the seat may not see them, as the judge)."""
    problem: str | None = None
    """Why the previous answer could not be used, when the turn is asked again."""


@dataclass(frozen=True)
class PersonAnswer:
    argument: str
    label: str | None = None
    confidence: float | None = None

    def message(self) -> str:
        """The turn as a model would have written it, so that the same parser reads a person and a model."""
        lines = [self.argument.strip()] if self.argument.strip() else []
        if self.label is not None:
            lines.append(f"FINAL ANSWER: {self.label}")
        if self.confidence is not None:
            lines.append(f"CONFIDENCE: {self.confidence:g}")
        return "\n".join(lines)


@runtime_checkable
class TurnInput(Protocol):
    """A front end that asks a person for a turn in parts (see the module's docstring)."""

    def ask_turn(self, turn: PersonTurn) -> PersonAnswer | Awaitable[PersonAnswer]: ...


def console_input(prompt: str) -> str:
    """Read one answer from the terminal; several lines end with an empty line."""
    print(prompt, end="", flush=True)
    return _read_lines(input)


def _read_lines(read: Callable[[], str], on_command: Callable[[str], bool] | None = None) -> str:
    lines: list[str] = []
    while True:
        try:
            line = read()
        except EOFError:
            break
        if on_command is not None and on_command(line.strip()):
            continue
        if not line.strip():
            if lines:
                break
            continue
        lines.append(line)
    return "\n".join(lines)


def open_file(path: Path) -> str:
    """Open ``path`` in the desktop's viewer; what happened, in words (a server or SSH session has no viewer)."""
    opener = "open" if sys.platform == "darwin" else "xdg-open"
    if sys.platform.startswith("win"):
        os.startfile(path)  # type: ignore[attr-defined]  # noqa: S606 - the user's own file, on their request
        return f"opened {path}"
    if shutil.which(opener) is None or not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or sys.platform == "darwin"):
        return f"no image viewer here; open {path} yourself"
    subprocess.Popen([opener, str(path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # noqa: S603
    return f"opened {path}"


@dataclass
class TerminalSeat:
    """A person at the terminal: reads the argument (a blank line ends it), then the label as a choice,
    then the confidence as a number. ``read``, ``write`` and ``opener`` are the terminal's by default."""

    read: Callable[[], str] = input
    write: Callable[[str], None] = field(default=lambda text: print(text, flush=True))
    opener: Callable[[Path], str] = open_file

    def __call__(self, prompt: str) -> str:
        """The plain input function, for a seat that asks for one text."""
        self.write(prompt)
        return _read_lines(self.read)

    def ask_turn(self, turn: PersonTurn) -> PersonAnswer:
        self.write(turn.screen)
        if turn.problem:
            self.write(f"\nYour previous answer could not be used: {turn.problem}. Please answer again.")
        self.write("\n" + how_to_answer(turn))
        argument = ""
        while not argument:
            argument = _read_lines(self.read, lambda line: self._command(line, turn))
            if not argument:
                self.write("(an answer needs some text; type it, then an empty line)")
        if turn.labels is None:
            return PersonAnswer(argument)
        return PersonAnswer(argument, self._label(turn.labels), self._confidence())

    def _command(self, line: str, turn: PersonTurn) -> bool:
        """``open`` or ``open N``: open the post's image N (default 1) instead of taking the line as text."""
        words = line.lower().split()
        if not turn.images or not words or words[0] != "open" or len(words) > 2:
            return False
        index = int(words[1]) if len(words) == 2 and words[1].isdigit() else 1 if len(words) == 1 else 0
        if not 1 <= index <= len(turn.images):
            self.write(f"(there is no image {words[1]}; the post has {len(turn.images)})")
        else:
            self.write(f"({self.opener(turn.images[index - 1])})")
        return True

    def _label(self, labels: tuple[str, ...]) -> str:
        choices = "  ".join(f"{i}) {label}" for i, label in enumerate(labels, start=1))
        while True:
            self.write(f"Your answer? {choices}")
            given = self._line().strip()
            if given.isdigit() and 1 <= int(given) <= len(labels):
                return labels[int(given) - 1]
            named = [label for label in labels if label.lower() == given.lower().replace(" ", "_")]
            if named:
                return named[0]
            self.write(f"({given!r} is none of them: type a number from 1 to {len(labels)}, or the label)")

    def _confidence(self) -> float:
        while True:
            self.write("How sure are you? A number from 0 (not at all) to 1 (certain), such as 0.8:")
            given = self._line().strip().rstrip("%")
            try:
                value = float(given)
            except ValueError:
                self.write(f"({given!r} is not a number)")
                continue
            if 1 < value <= 100 and given.isdigit():
                value /= 100
            if 0 <= value <= 1:
                return round(value, 2)
            self.write("(give a number from 0 to 1)")

    def _line(self) -> str:
        try:
            return self.read()
        except EOFError:
            raise EOFError("the terminal closed before the answer was complete") from None


def how_to_answer(turn: PersonTurn) -> str:
    """What the person does next, in the order they will be asked."""
    steps = ["Type your message below; it may take several lines. An empty line ends it."]
    if turn.images:
        steps.append("Type 'open' on a line of its own to open the post's image"
                     + (" ('open 2' for the second)." if len(turn.images) > 1 else "."))
    if turn.labels is not None:
        steps.append(f"Then you choose your answer ({', '.join(turn.labels)}) and say how sure you are (0 to 1).")
    return "How to answer: " + " ".join(steps)


class QueueInput:
    """An async input function fed from code: a notebook widget or a web page ``put``s the answers.

    ``prompts`` receives each prompt shown to the person, so a UI can display it. ``asks_answer``: the UI asks
    for the label and the confidence itself (the web page's choices and slider) and writes the answer lines, so
    the prompt need not tell the person how to write them.
    """

    def __init__(self, asks_answer: bool = False) -> None:
        self.answers: asyncio.Queue[str] = asyncio.Queue()
        self.prompts: asyncio.Queue[str] = asyncio.Queue()
        self.asks_answer = asks_answer

    def put(self, answer: str) -> None:
        self.answers.put_nowait(answer)

    async def __call__(self, prompt: str, cancellation_token: Optional[CancellationToken] = None) -> str:
        await self.prompts.put(prompt)
        return await self.next_answer(cancellation_token)

    async def next_answer(self, cancellation_token: Optional[CancellationToken] = None) -> str:
        """The next answer put in; a cancelled debate stops waiting for it. AutoGen's team lets a
        cancellation through only once every agent has returned, so a seat still waiting for a person
        who has left (closed the page, stopped the cell) would otherwise hold the debate for ever."""
        waiting = asyncio.ensure_future(self.answers.get())
        if cancellation_token is not None:
            cancellation_token.link_future(waiting)
        return await waiting
