"""A person in any seat, through AutoGen's ``UserProxyAgent`` and an input function.

The person sees what a model in that seat would see (the same visibility rules: a judge gets no
evidence and no image), told the way a person is told: the other seats by their names (a model
debater under the ``human`` framing reads them as "Me", which would only confuse a person), the
post's image files by their paths, and what to do without the model's answer-format instructions
where the front end asks for the label and the confidence itself (:class:`~debates.debate_engine.human_input.TurnInput`,
the terminal). Their message is read by the same parser as a model's; if it cannot be read, they
are asked again.
"""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path
from typing import AsyncGenerator, Sequence, cast

from autogen_agentchat.agents import UserProxyAgent
from autogen_agentchat.base import Response
from autogen_agentchat.messages import BaseAgentEvent, BaseChatMessage, TextMessage, UserInputRequestedEvent
from autogen_core import CancellationToken

import prompts
from debates.debate_engine.human_input import InputFunc, PersonAnswer, PersonTurn, TurnInput
from debates.debate_engine.preparation import SamplePreparation
from debates.debate_engine.visibility import SeatView
from debates.debate_engine.config import DebateConfig, SeatConfig
from debates.debate_engine.protocol import DebateProtocol
from m3d_agents.evidence import Evidence, evidence_block
from m3d_agents.labels import Taxonomy
from m3d_agents.media.images import PreparedSample
from m3d_agents.media.post_content import image_context


class HumanSeat(UserProxyAgent):
    def __init__(
        self,
        seat: SeatConfig,
        config: DebateConfig,
        protocol: DebateProtocol,
        taxonomy: Taxonomy,
        preparation: SamplePreparation,
        evidence: list[Evidence],
        input_func: InputFunc | TurnInput,
        max_asks: int = 3,
    ) -> None:
        self._turn_input = input_func if isinstance(input_func, TurnInput) else None
        plain = cast(InputFunc, input_func)
        if self._turn_input is not None:
            plain = cast(InputFunc, lambda prompt: "")
        elif not inspect.isroutine(plain) and inspect.iscoroutinefunction(type(plain).__call__):
            plain = cast(InputFunc, type(plain).__call__.__get__(plain))  # an async __call__ (QueueInput)
        super().__init__(seat.name, description=f"a person as {seat.role}", input_func=plain)
        self.seat = seat
        self.view = SeatView(seat, config, for_person=True)
        self._config = config
        self._protocol = protocol
        self._taxonomy = taxonomy
        self._preparation = preparation
        self._evidence = evidence
        self._post = ""
        self._images: tuple[Path, ...] = ()
        self._max_asks = max_asks
        self._writes_lines = not getattr(input_func, "asks_answer", False)

    @property
    def answers(self) -> bool:
        return self._protocol.answers_required(self.seat, self._config)

    def brief(self) -> str:
        """Who the person is in this debate, and who the others are, by name; a word on the evidence only where the
        seat is shown some (a seat with none, or a judge, which never gets it, is told nothing about it)."""
        others = [s for s in self._config.seats if s.name != self.seat.name]
        stance = prompts.render("human/stance", stance=self.seat.stance.replace("_", " ")) if self.seat.stance else ""
        quoted = bool(self._evidence) and evidence_block(self._evidence) in self._post
        return prompts.render(
            "human/brief", seat=self.seat.name, role=self.seat.role, config=self._config.name,
            others=", ".join(f"{s.name} ({s.role})" for s in others) or "none", stance=f"\n{stance}" if stance else "",
            evidence=f"\n{prompts.load('human/evidence')}" if quoted else "",
        )

    def screen(self, answer_format: bool) -> str:
        """Everything the person reads before answering: the brief on the first turn, the post, the debate, the task."""
        most = self._protocol.most_turns(self._config).get(self.seat.name, 1)
        header = f"=== You are {self.seat.name} ({self.seat.role}) · your turn {self.view.own_round} of at most {most} ==="
        parts = [header]
        if self.view.own_round == 1:
            parts.append(self.brief())
        parts += [self._post, self._protocol.instruction(self.view)]
        if answer_format and self.answers:
            parts.append(prompts.render("human/answer_format", labels=", ".join(self._taxonomy.labels)))
        return "\n\n".join(p for p in parts if p.strip())

    def prompt(self) -> str:
        """The whole screen for an input function that reads one text (the person writes the answer lines)."""
        return f"{self.screen(answer_format=self._writes_lines)}\n> "

    def _post_block(self, prepared: PreparedSample) -> str:
        """The post as the protocol lets this seat know it, with the image files named where the seat may see them."""
        sees = self._protocol.sees_images(self.seat) and bool(prepared.images)
        block = self._protocol.post_block(self.seat, prepared, self._evidence, vision=sees)
        if not sees:
            return block
        self._images = tuple(Path(path) for path in prepared.sample.images)
        paths = "\n".join(prompts.render("human/image", number=i, path=p) for i, p in enumerate(self._images, start=1))
        listed = f"The post has {len(self._images)} image{'s' if len(self._images) > 1 else ''}:\n{paths}"
        attached = image_context(prepared, vision=True).split("\n")[0]
        return block.replace(attached, listed, 1) if attached in block else f"{block}\n\n{listed}"

    async def _ask(self, problem: str | None, cancellation_token: CancellationToken) -> str:
        assert self._turn_input is not None
        turn = PersonTurn(
            screen=self.screen(answer_format=False), labels=tuple(self._taxonomy.labels) if self.answers else None,
            images=self._images, problem=problem,
        )
        asked = self._turn_input.ask_turn
        if inspect.iscoroutinefunction(asked):
            answer = await cast(asyncio.Future[PersonAnswer], asked(turn))
        else:
            answer = cast(PersonAnswer, await asyncio.to_thread(asked, turn))
        return answer.message()

    async def on_messages_stream(
        self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken
    ) -> AsyncGenerator[BaseAgentEvent | BaseChatMessage | Response, None]:
        self.view.add(messages)
        if not self._post:
            self._post = self._post_block(await self._preparation.for_seat(self.seat))
        prompt = self.prompt()
        text, problem = "", None
        for _ in range(self._max_asks):
            yield UserInputRequestedEvent(request_id=f"{self.name}-{self.view.own_round}", source=self.name)
            if self._turn_input is not None:
                text = (await self._ask(problem, cancellation_token)).strip()
            else:
                text = (await self._get_input(prompt, cancellation_token)).strip()
            reading = self._protocol.read_turn(text, self.seat.role, self._taxonomy, self._config.max_queries_per_turn)
            if text and not (reading.error and self.answers):
                break
            problem = reading.error or "the message was empty"
            prompt = prompts.render("common/retry_unreadable", reason=problem) + "\n> "
        self.view.add_own(text)
        yield Response(chat_message=TextMessage(content=text or "(no answer)", source=self.name))
