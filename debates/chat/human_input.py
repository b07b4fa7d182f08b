"""Where a person's answers come from: the terminal, or a queue that a notebook or a web page fills.

An input function takes the prompt the person should read and returns their answer. It may be a
plain function or a coroutine function (AutoGen's ``UserProxyAgent`` accepts both), so a person can
sit in any seat from any front end.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, Optional, Union

from autogen_core import CancellationToken

SyncInput = Callable[[str], str]
AsyncInput = Callable[[str, Optional[CancellationToken]], Awaitable[str]]
InputFunc = Union[SyncInput, AsyncInput]


def console_input(prompt: str) -> str:
    """Read one answer from the terminal; several lines end with an empty line."""
    print(prompt, end="", flush=True)
    lines: list[str] = []
    while True:
        try:
            line = input()
        except EOFError:
            break
        if not line.strip():
            if lines:
                break
            continue
        lines.append(line)
    return "\n".join(lines)


class QueueInput:
    """An async input function fed from code: a notebook widget or a web page ``put``s the answers.

    ``prompts`` receives each prompt shown to the person, so a UI can display it.
    """

    def __init__(self) -> None:
        self.answers: asyncio.Queue[str] = asyncio.Queue()
        self.prompts: asyncio.Queue[str] = asyncio.Queue()

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
