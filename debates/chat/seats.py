"""Debate participants backed by a model: debaters, judges, actors and skeptics.

A seat knows only the messages the group chat sent it (see :mod:`debates.chat.visibility`) plus the
post and, unless it is the judge, the retrieved evidence it was given when the team was built.
"""

from __future__ import annotations

import asyncio
from typing import Any, Callable, Sequence

from autogen_agentchat.agents import BaseChatAgent
from autogen_agentchat.base import Response
from autogen_agentchat.messages import BaseChatMessage, TextMessage
from autogen_core import CancellationToken
from autogen_core.models import SystemMessage, UserMessage
from pydantic import BaseModel

import prompts
from debates.config import MODALITY_ROLES, DebateConfig, SeatConfig
from debates.turns.scoring import SelectorState
from debates.chat.state import StanceReading, read_turn
from debates.chat.structured_turns import instruction, read_structured, turn_schema
from debates.turns.base import TurnContext, TurnPolicy
from debates.chat.visibility import SeatView
from m3d_agents.media.post_content import describe_image, image_context
from m3d_agents.backends.metering import MeteredClient
from m3d_agents.errors import ParseError
from m3d_agents.evidence import Evidence
from m3d_agents.media.images import PreparedSample
from m3d_agents.labels import Taxonomy
from m3d_agents.media.post_content import AgentImage

STANCE_TEXT = {
    "misinformation": "the post IS misinformation",
    "not_misinformation": "the post is NOT misinformation",
}


def answers_required(seat: SeatConfig, config: DebateConfig) -> bool:
    """Whose messages must end in a readable answer (and are retried until they do)."""
    if seat.role in ("judge", "actor", "single", *MODALITY_ROLES):
        return True
    return seat.role == "debater" and config.protocol != "judged"


def system_prompt(seat: SeatConfig, config: DebateConfig, taxonomy: Taxonomy) -> str:
    framing = prompts.load(f"debate/framing_{config.framing}")
    answer_format = prompts.render("common/answer_format", labels=", ".join(taxonomy.labels))
    if seat.role == "judge":
        return prompts.render("debate/judge_system", answer_format=answer_format)
    if seat.role in MODALITY_ROLES:
        return prompts.load(f"cascade/{seat.role}_system")
    if seat.role == "single":
        return prompts.render("debate/standard_system", answer_format=answer_format)
    if seat.role == "actor":
        return prompts.render("debate/actor_system", framing=framing, answer_format=answer_format)
    if seat.role == "skeptic":
        return prompts.render("debate/skeptic_system", framing=framing)
    if config.protocol == "judged":
        stance = seat.stance or ""
        return prompts.render("debate/judged_debater_system", framing=framing, stance_text=STANCE_TEXT.get(stance, f"the correct label is '{stance}'"))
    if config.protocol == "disambiguation":
        return prompts.render(
            "debate/disambiguation_system", framing=framing, answer_format=answer_format, max_queries=config.max_queries_per_turn
        )
    return prompts.render("debate/debater_system", framing=framing, answer_format=answer_format)


def post_block(seat: SeatConfig, prepared: PreparedSample, evidence: list[Evidence], vision: bool) -> str:
    """The stable prefix of every prompt of a seat: the post, then (not for the judge) the evidence."""
    if seat.role == "judge":
        return prompts.render("debate/task", text=prepared.sample.text, image_context="", evidence="").strip()
    if evidence:
        evidence_text = "Quoted evidence (retrieved from the web; untrusted):\n\n" + "\n\n".join(e.quoted() for e in evidence)
    else:
        evidence_text = "No retrieved evidence is available."
    context = image_context(prepared, vision)
    if seat.role == "image" and vision and prepared.images:
        reports = "\n".join(f"Image {i}: {describe_image(image)}" for i, image in enumerate(prepared.images, start=1))
        context = f"{context}\nWhat analysis tools report about the image(s):\n{reports}"
    return prompts.render("debate/task", text=prepared.sample.text, image_context=context, evidence=evidence_text).strip()


class ModelSeat(BaseChatAgent):
    def __init__(
        self,
        seat: SeatConfig,
        config: DebateConfig,
        taxonomy: Taxonomy,
        client: MeteredClient,
        prepared: PreparedSample,
        evidence: list[Evidence],
        turn_policy: TurnPolicy,
        create_kwargs: dict[str, object],
        vision: bool,
        selector: SelectorState | None = None,
        structured: Callable[[type[BaseModel]], dict[str, Any]] | None = None,
    ) -> None:
        super().__init__(seat.name, description=f"{seat.role} in a {config.name} debate")
        self.seat = seat
        self.view = SeatView(seat, config)
        self._config = config
        self._taxonomy = taxonomy
        self._client = client
        self._prepared = prepared
        self._system = system_prompt(seat, config, taxonomy)
        self._prefix = post_block(seat, prepared, evidence, vision)
        self._images = [AgentImage.from_pil(i.image) for i in prepared.images] if vision and seat.role != "judge" else []
        self._turn = turn_policy
        self._create_kwargs = dict(create_kwargs)
        self._schema: type[BaseModel] | None = None
        if structured is not None and answers_required(seat, config) and seat.role not in MODALITY_ROLES:
            with_queries = config.protocol == "disambiguation"
            schema = turn_schema(tuple(taxonomy.labels), with_queries)
            args = structured(schema)
            if args:
                self._schema = schema
                self._create_kwargs.update(args["extra_create_args"])
                self._structured_hint = instruction(taxonomy, with_queries)
        self._vision = vision
        self._selector = selector if selector is not None else SelectorState()
        self.last_error: str | None = None

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage,)

    def _parse(self, text: str) -> StanceReading:
        if self._schema is not None:
            return read_structured(text, self._schema, self._taxonomy, self._config.max_queries_per_turn)
        reading = read_turn(text, self.seat.role, self._taxonomy, self._config.max_queries_per_turn)
        if reading.error and answers_required(self.seat, self._config):
            raise ParseError(f"{self._taxonomy.name} label", reading.error, text)
        return reading

    async def on_messages(self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken) -> Response:
        self.view.add(messages)
        content: list[str | AgentImage] = [self._prefix]
        content.extend(self._images)
        content.append(self.view.instruction())
        if self._schema is not None:
            content.append(self._structured_hint)
        user = UserMessage(content=content if self._images else "\n\n".join(str(c) for c in content), source="user")
        producing = asyncio.ensure_future(self._turn.produce(
            self._client,
            [SystemMessage(content=self._system), user],
            self._parse,
            retries=self._config.retries,
            create_kwargs={"extra_create_args": dict(self._create_kwargs)},
            on_retry=lambda: setattr(self._client.ledger, "parse_retries", self._client.ledger.parse_retries + 1),
            context=TurnContext(self.seat, self._config, self._prepared, self._selector, self._vision, self.view.own_round),
        ))
        # Every call of the turn (candidates, rewards, critiques, the planner) stops when the debate does.
        cancellation_token.link_future(producing)
        answer = await producing
        self.last_error = answer.error
        text = answer.value.rendered if answer.value is not None and answer.value.rendered else answer.text
        self.view.add_own(text)
        return Response(chat_message=TextMessage(content=text, source=self.name))

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        self.view = SeatView(self.seat, self._config)
