"""The debate team: an AutoGen group chat whose manager asks a speaker policy who speaks next.

Why a custom manager: the built-in teams pick one speaker at a time from the message thread,
while debates need concurrent rounds (``sync``) and a stopping rule computed over *every*
debater's latest answer, which an AutoGen termination condition cannot see when speakers run in
parallel. The manager records each message in an explicit state object, then asks the policy;
when the policy returns None the chat ends with the policy's reason. Ordinary AutoGen
termination conditions (timeouts, external stop) still compose on top.

The team knows nothing of debates beyond :class:`ChatState`: any strategy that runs a group of
participants under a deterministic policy (a tree search, a fact-checking workflow) can host them
here and keep streaming, cancellation and accounting.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Generic, List, Protocol, Sequence, TypeVar

from autogen_agentchat.base import ChatAgent, Team, TerminationCondition
from autogen_agentchat.messages import BaseAgentEvent, BaseChatMessage, MessageFactory, StopMessage
from autogen_agentchat.teams import BaseGroupChat
from autogen_agentchat.teams._group_chat._base_group_chat_manager import BaseGroupChatManager
from autogen_agentchat.teams._group_chat._events import GroupChatTermination
from autogen_core import AgentRuntime

from debates.groupchat.runtime import team_runtime


class ChatState(Protocol):
    """What the manager needs of a strategy's per-sample state."""

    stop_reason: str

    def record(self, speaker: str, text: str) -> object:
        """Take in a participant's message (parse it once, keep it)."""

    def reset(self) -> None: ...


S = TypeVar("S", bound=ChatState)


class DebateManager(BaseGroupChatManager):
    def __init__(
        self,
        name: str,
        group_topic_type: str,
        output_topic_type: str,
        participant_topic_types: List[str],
        participant_names: List[str],
        participant_descriptions: List[str],
        output_message_queue: asyncio.Queue[BaseAgentEvent | BaseChatMessage | GroupChatTermination],
        termination_condition: TerminationCondition | None,
        max_turns: int | None,
        message_factory: MessageFactory,
        emit_team_events: bool,
        state: ChatState,
        policy: Callable[[Any], list[str] | None],
    ) -> None:
        super().__init__(
            name, group_topic_type, output_topic_type, participant_topic_types, participant_names,
            participant_descriptions, output_message_queue, termination_condition, max_turns, message_factory,
            emit_team_events,
        )
        self._state = state
        self._policy = policy
        self._planned: list[str] | None = None

    async def validate_group_state(self, messages: List[BaseChatMessage] | None) -> None:
        pass

    async def reset(self) -> None:
        self._current_turn = 0
        self._message_thread.clear()
        self._state.reset()
        self._planned = None
        if self._termination_condition is not None:
            await self._termination_condition.reset()

    async def update_message_thread(self, messages: Sequence[BaseAgentEvent | BaseChatMessage]) -> None:
        await super().update_message_thread(messages)
        for message in messages:
            if isinstance(message, BaseChatMessage) and message.source in self._participant_names:
                self._state.record(message.source, message.to_model_text())

    async def _apply_termination_condition(
        self, delta: Sequence[BaseAgentEvent | BaseChatMessage], increment_turn_count: bool = False
    ) -> bool:
        if await super()._apply_termination_condition(delta, increment_turn_count):
            return True
        self._planned = self._policy(self._state)
        if self._planned is None:
            await self._signal_termination(StopMessage(content=self._state.stop_reason or "debate over", source=self._name))
            return True
        return False

    async def _log_speaker_selection(self, speaker_names: List[str]) -> None:
        """AutoGen builds the selection event before it asks whether team events are emitted; ask first."""
        if self._emit_team_events:
            await super()._log_speaker_selection(speaker_names)

    async def select_speaker(self, thread: Sequence[BaseAgentEvent | BaseChatMessage]) -> List[str] | str:
        planned = self._planned if self._planned is not None else self._policy(self._state)
        self._planned = None
        if not planned:
            raise RuntimeError(f"the speaker policy chose nobody: {self._state.stop_reason}")
        return planned


class PolicyGroupChat(BaseGroupChat, Generic[S]):
    """A group chat of participants driven by a speaker policy over an explicit state.

    ``policy(state)`` names who speaks next (several names speak concurrently), or returns None to
    end the chat after setting ``state.stop_reason``.
    """

    def __init__(
        self,
        participants: List[ChatAgent | Team],
        state: S,
        policy: Callable[[S], list[str] | None],
        *,
        termination_condition: TerminationCondition | None = None,
        max_turns: int | None = None,
        runtime: AgentRuntime | None = None,
    ) -> None:
        self.state = state
        self.policy = policy
        super().__init__(
            name="PolicyGroupChat",
            description="a debate",
            participants=participants,
            group_chat_manager_name="DebateManager",
            group_chat_manager_class=DebateManager,
            termination_condition=termination_condition,
            max_turns=max_turns,
            runtime=runtime if runtime is not None else team_runtime(),
        )
        if runtime is None:
            # A runtime of the team's own, which it starts and stops with every run, as AutoGen's default one
            # (passed in, rather than replacing the default after the fact, so that no default is built and dropped).
            self._embedded_runtime = True

    def _create_group_chat_manager_factory(
        self,
        name: str,
        group_topic_type: str,
        output_topic_type: str,
        participant_topic_types: List[str],
        participant_names: List[str],
        participant_descriptions: List[str],
        output_message_queue: asyncio.Queue[BaseAgentEvent | BaseChatMessage | GroupChatTermination],
        termination_condition: TerminationCondition | None,
        max_turns: int | None,
        message_factory: MessageFactory,
    ) -> Callable[[], DebateManager]:
        def factory() -> DebateManager:
            return DebateManager(
                name, group_topic_type, output_topic_type, participant_topic_types, participant_names,
                participant_descriptions, output_message_queue, termination_condition, max_turns, message_factory,
                self._emit_team_events, self.state, self.policy,
            )

        return factory
