"""A person in any seat, through AutoGen's ``UserProxyAgent`` and an input function.

The person sees exactly what a model in that seat would see (the same visibility rules) and their
message is read by the same parser. If the answer line cannot be read, they are asked again.
"""

from __future__ import annotations

import inspect
from typing import AsyncGenerator, Sequence, cast

from autogen_agentchat.agents import UserProxyAgent
from autogen_agentchat.base import Response
from autogen_agentchat.messages import BaseAgentEvent, BaseChatMessage, TextMessage, UserInputRequestedEvent
from autogen_core import CancellationToken

import prompts
from debates.chat.human_input import InputFunc
from debates.chat.preparation import SamplePreparation
from debates.chat.visibility import SeatView
from debates.chat.config import DebateConfig, SeatConfig
from debates.chat.protocol import DebateProtocol
from m3d_agents.evidence import Evidence
from m3d_agents.labels import Taxonomy

class HumanSeat(UserProxyAgent):
    def __init__(
        self,
        seat: SeatConfig,
        config: DebateConfig,
        protocol: DebateProtocol,
        taxonomy: Taxonomy,
        preparation: SamplePreparation,
        evidence: list[Evidence],
        input_func: InputFunc,
        max_asks: int = 3,
    ) -> None:
        if not inspect.isroutine(input_func) and inspect.iscoroutinefunction(type(input_func).__call__):
            input_func = cast(InputFunc, type(input_func).__call__.__get__(input_func))  # an async __call__ (QueueInput)
        super().__init__(seat.name, description=f"a person as {seat.role}", input_func=input_func)
        self.seat = seat
        self.view = SeatView(seat, config, protocol)
        self._config = config
        self._protocol = protocol
        self._taxonomy = taxonomy
        self._preparation = preparation
        self._evidence = evidence
        self._brief = ""
        self._max_asks = max_asks

    def prompt(self) -> str:
        """The whole screen a person reads before typing: the brief on the first turn, then the debate."""
        header = f"=== You are {self.seat.name} ({self.seat.role}), round {self.view.own_round} ==="
        body = self.view.instruction()
        if self.view.own_round == 1:
            body = f"{self._brief}\n\n{body}"
        return f"{header}\n{body}\n> "

    async def on_messages_stream(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Response, None]:
        self.view.add(messages)
        if not self._brief:
            prepared = await self._preparation.for_seat(self.seat)
            self._brief = (self._protocol.system_prompt(self.seat, self._config, self._taxonomy) + "\n\n"
                           + self._protocol.post_block(self.seat, prepared, self._evidence, vision=False))
        prompt = self.prompt()
        text = ""
        for _ in range(self._max_asks):
            yield UserInputRequestedEvent(request_id=f"{self.name}-{self.view.own_round}", source=self.name)
            text = (await self._get_input(prompt, cancellation_token)).strip()
            reading = self._protocol.read_turn(text, self.seat.role, self._taxonomy, self._config.max_queries_per_turn)
            if text and not (reading.error and self._protocol.answers_required(self.seat, self._config)):
                break
            prompt = prompts.render("common/retry_unreadable", reason=reading.error or "the message was empty") + "\n> "
        self.view.add_own(text)
        yield Response(chat_message=TextMessage(content=text or "(no answer)", source=self.name))
