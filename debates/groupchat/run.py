"""Running a policy-driven group chat to its end: streaming, cancellation, and readable failures.

Every strategy that holds its seats in a group chat (the debate, AgentFact's workflow, FactGuard's
tool loop) runs it through :func:`run_team`, so cancellation and error reporting behave the same.
"""

from __future__ import annotations

import asyncio
import inspect
from typing import TYPE_CHECKING, Any, Protocol

from autogen_agentchat.base import TaskResult
from autogen_agentchat.messages import TextMessage
from autogen_core import CancellationToken

from debates.groupchat.team import PolicyGroupChat
from m3d_agents.errors import BackendError

if TYPE_CHECKING:
    from debates.strategy import RunContext


async def stop_turns(running: "asyncio.Future[None]", token: CancellationToken) -> None:
    """Stop a debate now, not after the turn in progress: AutoGen's team waits for its runtime to go
    idle before it lets a cancellation through, and the speaking seat's model call can take minutes.
    Cancelling the team's token first reaches that seat (see ``ModelSeat.on_messages``)."""
    token.cancel()
    running.cancel()
    await asyncio.gather(running, return_exceptions=True)


def root_cause(exc: BaseException) -> str:
    """The last line of an error that AutoGen re-raised with the agent's whole traceback in its text."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    last = lines[-1] if lines else type(exc).__name__
    head, sep, rest = last.partition(": ")
    is_class_name = bool(sep) and (head.endswith(("Error", "Exception")) or ("." in head and head.replace(".", "").replace("_", "").isalnum()))
    return rest if is_class_name else last


class TurnScreen(Protocol):
    """Holds finished turns back from the stream until they may be shown (see :class:`~debates.debate_engine.visibility.PeopleScreen`)."""

    def finished(self, turn: Any) -> list[Any]: ...

    def rest(self) -> list[Any]: ...


async def run_team(team: PolicyGroupChat[Any], state: Any, task: str, ctx: RunContext, what: str,
                   screen: TurnScreen | None = None) -> None:
    """Run a group chat to its end, streaming every message and finished turn; cancellation stops it at once.

    ``state`` must offer ``finished_turn(message)`` (see :class:`~debates.debate_engine.state.DebateState`) for
    turns to reach ``ctx.on_turn``. With a ``screen`` (people in seats), a finished turn and its
    message reach the callbacks only when the screen lets them out, and whatever it still holds when
    the chat ends goes out then.
    """
    token = CancellationToken()
    messages: dict[int, Any] = {}

    async def stream(item: Any, turn: Any) -> None:
        if ctx.on_message is not None:
            result = ctx.on_message(item, state)
            if inspect.isawaitable(result):
                await result
        if ctx.on_turn is not None and turn is not None:
            await ctx.emit(turn.transcript_turn())

    async def turns() -> None:
        async for item in team.run_stream(
            task=TextMessage(content=task, source="moderator"), output_task_messages=False, cancellation_token=token
        ):
            if isinstance(item, TaskResult):
                continue
            turn = state.finished_turn(item) if ctx.on_turn is not None or screen is not None else None
            if screen is None or turn is None:
                await stream(item, turn)
                continue
            messages[id(turn)] = item
            for shown in screen.finished(turn):
                await stream(messages.pop(id(shown)), shown)
        for shown in screen.rest() if screen is not None else []:
            await stream(messages.pop(id(shown)), shown)

    running = asyncio.ensure_future(turns())
    try:
        await asyncio.shield(running)
    except asyncio.CancelledError:
        await stop_turns(running, token)
        raise
    except BackendError:
        raise
    except Exception as exc:
        raise BackendError(f"{what} failed: {root_cause(exc)}") from exc
