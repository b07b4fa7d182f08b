"""A debate participant backed by a model, in any seat of any protocol.

A seat knows only the messages the group chat sent it (see :mod:`debates.debate_engine.visibility`) plus the
post and what its protocol lets it know about the post (the judge, for example, never gets the
retrieved evidence). Its prompts and how its answer is read are the protocol's; how the answer is
produced (one call, best-of-N ...) is its turn policy's.
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

from debates.debate_engine.preparation import SamplePreparation
from debates.debate_engine.reading import StanceReading
from debates.debate_engine.structured_turns import instruction, read_structured, turn_schema
from debates.debate_engine.visibility import SeatView
from debates.debate_engine.config import DebateConfig, SeatConfig
from debates.debate_engine.protocol import DebateProtocol
from debates.debate_engine.turn_policy import TurnContext, TurnPolicy, TurnRequest
from debates.debate_engine.turn_state import TurnPolicyState
from m3d_agents.backends.metering import MeteredClient
from m3d_agents.errors import ParseError
from m3d_agents.evidence import Evidence
from m3d_agents.grammars import Grammar
from m3d_agents.labels import Taxonomy
from m3d_agents.media.message_images import message_image
from m3d_agents.media.post_content import AgentImage
from m3d_agents.tools.cards import ToolContext

class ModelSeat(BaseChatAgent):
    def __init__(
        self,
        seat: SeatConfig,
        config: DebateConfig,
        protocol: DebateProtocol,
        taxonomy: Taxonomy,
        client: MeteredClient,
        preparation: SamplePreparation,
        evidence: list[Evidence],
        turn_policy: TurnPolicy,
        create_kwargs: dict[str, object],
        vision: bool,
        turn_state: TurnPolicyState | None = None,
        structured: Callable[[type[BaseModel]], dict[str, Any]] | None = None,
        tools: ToolContext | None = None,
        grammar: Grammar | None = None,
    ) -> None:
        super().__init__(seat.name, description=f"{seat.role} in a {config.name} debate")
        self.seat = seat
        self.view = SeatView(seat, config)
        self._config = config
        self._protocol = protocol
        self._taxonomy = taxonomy
        self._client = client
        self._preparation = preparation
        self._prepared = preparation.prepared
        self._evidence = evidence
        self._system = protocol.system_prompt(seat, config, taxonomy)
        self._prefix: str | None = None
        sees_images = vision and protocol.sees_images(seat)
        self._images = [message_image(i.image) for i in preparation.prepared.images] if sees_images else []
        self._turn = turn_policy
        self._create_kwargs = dict(create_kwargs)
        self._schema: type[BaseModel] | None = None
        with_queries = protocol.structured_turn(seat, config)
        if structured is not None and with_queries is not None:
            schema = turn_schema(tuple(taxonomy.labels), with_queries, config.max_queries_per_turn)
            args = structured(schema)
            if args:
                self._schema = schema
                self._create_kwargs.update(args["extra_create_args"])
                self._structured_hint = instruction(taxonomy, with_queries, config.max_queries_per_turn)
        if grammar is not None and self._schema is None:
            # The turn keeps its own text format; the server's grammar only guarantees it.
            self._create_kwargs.update(grammar.create_args())
        self._vision = vision
        self._turn_state = turn_state if turn_state is not None else TurnPolicyState()
        self._tools = tools
        self.last_error: str | None = None

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage,)

    def _parse(self, text: str) -> StanceReading:
        if self._schema is not None:
            return read_structured(text, self._schema, self._taxonomy, self._config.max_queries_per_turn)
        reading = self._protocol.read_turn(text, self.seat.role, self._taxonomy, self._config.max_queries_per_turn)
        if reading.error and self._protocol.answers_required(self.seat, self._config):
            raise ParseError(f"{self._taxonomy.name} label", reading.error, text)
        return reading

    async def _post_prefix(self, cancellation_token: CancellationToken) -> str:
        """The post as this seat sees it, made before its first turn (with whatever the protocol
        prepares for the seat then, such as the cascade's image description) and kept."""
        if self._prefix is None:
            preparing = asyncio.ensure_future(self._preparation.for_seat(self.seat))
            cancellation_token.link_future(preparing)
            self._prepared = await preparing
            self._prefix = self._protocol.post_block(self.seat, self._prepared, self._evidence, self._vision)
        return self._prefix

    async def on_messages(self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken) -> Response:
        self.view.add(messages)
        prefix = await self._post_prefix(cancellation_token)
        # What is the same for every turn of this seat (post, images, evidence, answer format) comes
        # before what changes (the debate so far), so a server's prefix cache reuses all of it.
        content: list[str | AgentImage] = [prefix]
        content.extend(self._images)
        if self._schema is not None:
            content.append(self._structured_hint)
        content.append(self._protocol.instruction(self.view))
        user = UserMessage(content=content if self._images else "\n\n".join(str(c) for c in content), source="user")
        producing = asyncio.ensure_future(self._turn.produce(TurnRequest(
            client=self._client,
            messages=[SystemMessage(content=self._system), user],
            parse=self._parse,
            retries=self._config.parse_retries,
            create_kwargs={"extra_create_args": dict(self._create_kwargs)},
            on_retry=self._client.ledger.count_parse_retry,
            context=TurnContext(self.seat, self._config, self._prepared, self._turn_state, self._vision, self.view.own_round,
                                self._tools),
        )))
        # Every call of the turn (candidates, rewards, critiques, the planner) stops when the debate does.
        cancellation_token.link_future(producing)
        answer = await producing
        self.last_error = answer.error
        text = answer.value.rendered if answer.value is not None and answer.value.rendered else answer.text
        self.view.add_own(text)
        return Response(chat_message=TextMessage(content=text, source=self.name))

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        self.view = SeatView(self.seat, self._config)
