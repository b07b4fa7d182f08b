"""The two participants of the FactGuard loop and the state they share.

The verifier is a model seat that keeps its own multi-turn context: the post first, then each of
its own turns as an assistant message and each batch of tool results as the next user message
(with the frame grid attached on vision backends, described in text otherwise). The tool desk is a
participant without a model: it runs the calls of the verifier's last turn through the tool
registry, enforcing the per-sample budgets, and never raises to the model: a failure is an
observation the model can read. The speaker policy alternates them until the verifier answers, a
turn stays unreadable after the retries, or the turns run out.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any, Sequence

from autogen_agentchat.agents import BaseChatAgent
from autogen_agentchat.base import Response
from autogen_agentchat.messages import BaseChatMessage, TextMessage
from autogen_core import CancellationToken
from autogen_core import Image as AgentImage
from autogen_core.models import AssistantMessage, LLMMessage, SystemMessage, UserMessage
from pydantic import BaseModel

import prompts
from debates.strategies.factguard.config import FactGuardConfig
from debates.strategies.factguard.frames import describe
from m3d_agents.grammars import tagged_turn
from m3d_agents.fence import one_line, quote_text
from m3d_agents.asking import ask
from m3d_agents.backends.metering import MeteredClient, UsageLedger
from m3d_agents.media.message_images import message_image
from debates.strategies.factguard.turn_format import ANSWER_STYLES, AgentTurn, parse_agent_turn
from m3d_agents.tools.cards import ToolContext, ToolRegistry, is_unavailable
from m3d_agents.verdict import TranscriptTurn

VERIFIER = "verifier"
DESK = "tool_desk"


@dataclass
class VerifierTurn:
    index: int
    text: str
    turn: AgentTurn | None
    error: str | None
    attempts: int


@dataclass
class Observation:
    text: str
    images: list[AgentImage] = field(default_factory=list)


@dataclass
class FinishedTurn:
    turn: TranscriptTurn

    def transcript_turn(self) -> TranscriptTurn:
        return self.turn


class FactGuardState:
    """Verifier turns and tool observations of one sample, and whose move it is."""

    def __init__(self, max_turns: int) -> None:
        self.max_turns = max_turns
        self.turns: list[VerifierTurn] = []
        self.observations: list[Observation] = []
        self.stop_reason = ""
        self.answered_calls = 0

    def record(self, speaker: str, text: str) -> None:
        """The seats write their structured results here themselves; the text is already in the transcript."""

    def reset(self) -> None:
        self.turns.clear()
        self.observations.clear()
        self.stop_reason = ""
        self.answered_calls = 0

    def next_speakers(self) -> list[str] | None:
        if not self.turns:
            return [VERIFIER]
        if len(self.observations) >= len(self.turns):
            return [VERIFIER]
        last = self.turns[-1]
        if last.turn is None:
            self.stop_reason = f"unreadable turn after {last.attempts} attempts: {last.error}"
            return None
        if last.turn.answer is not None:
            self.stop_reason = "answered"
            return None
        if last.index >= self.max_turns:
            self.stop_reason = f"no answer within {self.max_turns} turns"
            return None
        return [DESK]

    def transcript(self) -> list[TranscriptTurn]:
        out: list[TranscriptTurn] = []
        for i, turn in enumerate(self.turns):
            out.append(verifier_transcript(turn))
            if i < len(self.observations):
                out.append(TranscriptTurn(speaker=DESK, role="tool_desk", round=turn.index, text=self.observations[i].text))
        return out

    def finished_turn(self, item: Any) -> FinishedTurn | None:
        if not isinstance(item, TextMessage):
            return None
        if item.source == VERIFIER and self.turns:
            return FinishedTurn(verifier_transcript(self.turns[-1]))
        if item.source == DESK and self.observations:
            return FinishedTurn(TranscriptTurn(speaker=DESK, role="tool_desk", round=len(self.turns), text=item.content))
        return None


def verifier_transcript(turn: VerifierTurn) -> TranscriptTurn:
    stance = turn.turn.answer if turn.turn is not None else None
    return TranscriptTurn(speaker=VERIFIER, role="verifier", round=turn.index, text=turn.text, stance=stance,
                          parse_error=turn.error)


def user_message(text: str, images: Sequence[AgentImage], source: str) -> UserMessage:
    return UserMessage(content=[text, *images] if images else text, source=source)


def opening_messages(system: str, first: tuple[str, str], images: Sequence[AgentImage], max_turns: int) -> list[LLMMessage]:
    """The verifier's first call: the system prompt, then the post with the frames (tools closed when one turn is all)."""
    text = first[1] if max_turns <= 1 else first[0]
    return [SystemMessage(content=system), user_message(text, images, "user")]


class VerifierSeat(BaseChatAgent):
    def __init__(
        self,
        config: FactGuardConfig,
        state: FactGuardState,
        client: MeteredClient,
        ledger: UsageLedger,
        system: str,
        first: tuple[str, str],
        first_images: list[AgentImage],
        arguments: dict[str, type[BaseModel]],
        create: dict[str, Any],
    ) -> None:
        super().__init__(VERIFIER, description="decides whether a video post is fake, calling tools when evidence is needed")
        self._config = config
        self._state = state
        self._client = client
        self._ledger = ledger
        self._system = system
        self._first_open, self._first_last = first
        self._first_images = first_images
        self._arguments = arguments
        self._create = create
        self._history: list[LLMMessage] = []

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage,)

    async def on_messages(self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken) -> Response:
        index = len(self._state.turns) + 1
        last = index >= self._config.max_turns
        if index == 1:
            self._history = opening_messages(self._system, (self._first_open, self._first_last), self._first_images,
                                             self._config.max_turns)
        else:
            previous, observation = self._state.turns[-1], self._state.observations[-1]
            self._history += [
                AssistantMessage(content=previous.text, source=VERIFIER),
                user_message(observation.text, observation.images, DESK),
            ]

        def parse(text: str) -> AgentTurn:
            return parse_agent_turn(text, self._arguments, tools_open=not last, answer_style=self._config.answer_style,
                                    max_calls=self._config.max_calls_per_turn)

        grammar = tagged_turn(list(self._arguments), list(ANSWER_STYLES[self._config.answer_style]), tools_open=not last,
                              max_calls=self._config.max_calls_per_turn)
        create = {"extra_create_args": {**self._create, **grammar.create_args()}}
        asking = asyncio.ensure_future(ask(self._client, list(self._history), parse, retries=self._config.parse_retries,
                                           create_kwargs=create, on_retry=self._ledger.count_parse_retry))
        cancellation_token.link_future(asking)
        answer = await asking
        self._state.turns.append(VerifierTurn(index, answer.text, answer.value, answer.error, answer.attempts))
        return Response(chat_message=TextMessage(content=answer.text or "(empty)", source=self.name))

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        self._history = []


class ToolDesk(BaseChatAgent):
    def __init__(self, state: FactGuardState, context: ToolContext, registry: ToolRegistry, tools: list[str],
                 vision: bool, ocr: bool, max_turns: int) -> None:
        super().__init__(DESK, description="runs the verifier's tool calls within their budgets")
        self._state = state
        self._context = context
        self._tools = {t.name: t for t in registry.function_tools(context, tools)}
        self._vision = vision
        self._ocr = ocr
        self._max_turns = max_turns

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage,)

    async def on_messages(self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken) -> Response:
        turn = self._state.turns[-1].turn
        assert turn is not None
        made_before = len(self._context.artifacts)
        blocks = []
        for call in turn.tool_calls:
            not_answered_before = self._not_answered()
            try:
                output = str(await self._tools[call.name].run_json(call.arguments, cancellation_token))
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # noqa: BLE001 - a failing tool is an observation, not a crash
                self._context.stats[f"{call.name}.errors"] += 1
                output = f"{call.name}: error: {exc}"
            if self._not_answered() == not_answered_before and not is_unavailable(output):
                self._state.answered_calls += 1
            blocks.append(f"{call.name} {one_line(json.dumps(call.arguments, ensure_ascii=False))}:\n{quote_text(output, call.name)}")
        images: list[AgentImage] = []
        for artifact in self._context.artifacts[made_before:]:
            if self._vision:
                images.append(message_image(artifact.image))
            else:
                blocks.append(self._described(artifact.image, artifact.caption))
        last_next = len(self._state.turns) + 1 >= self._max_turns
        instruction = prompts.load("factguard/final" if last_next else "factguard/continue")
        text = prompts.render("factguard/observation", results="\n\n".join(blocks), instruction=instruction)
        self._state.observations.append(Observation(text, images))
        return Response(chat_message=TextMessage(content=text, source=self.name))

    def _not_answered(self) -> int:
        """Calls refused, unavailable or failed so far: a call that adds none of these ran and answered,
        which is what the tool reward pays for (a call answered "unavailable" found nothing)."""
        stats = self._context.stats
        return sum(self._context.refusals.values()) + sum(
            count for name, count in stats.items() if name.endswith((".unavailable", ".errors")))

    def _described(self, picture: Any, caption: str) -> str:
        width, height = picture.size
        cells = [picture.crop((c * width // 2, r * height // 2, (c + 1) * width // 2, (r + 1) * height // 2))
                 for r in range(2) for c in range(2)]
        places = ("top left", "top right", "bottom left", "bottom right")
        lines = [f"You cannot see the picture ({caption}); what tools measured in each frame:"]
        lines += [f"- {place}: {describe(cell, self._ocr)}" for place, cell in zip(places, cells)]
        return "\n".join(lines)

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        pass
