"""The retrieval desk: a non-model participant that answers the debaters' disambiguation queries.

Its answers reach every debater, so they name no asker: a seat name ("agent_a") in a debater's
prompt would tell it that the other side is a configured model, which the human framing hides.
"""

from __future__ import annotations

import asyncio
from typing import Sequence

from autogen_agentchat.agents import BaseChatAgent
from autogen_agentchat.base import Response
from autogen_agentchat.messages import BaseChatMessage, TextMessage
from autogen_core import CancellationToken

from debates.debate_engine.state import DESK_NAME, DebateState
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.evidence import Evidence
from m3d_agents.fence import one_line
from retrieval.interfaces import QueryAnswerer
from m3d_agents.sample import Sample


class RetrievalDesk(BaseChatAgent):
    """Answers every query asked since its last turn, once each, and posts the results as quoted evidence."""

    def __init__(
        self, state: DebateState, answerer: QueryAnswerer | None, sample: Sample, ledger: UsageLedger, max_hits: int = 2
    ) -> None:
        super().__init__(DESK_NAME, description="answers disambiguation queries from retrieval")
        self._state = state
        self._answerer = answerer
        self._sample = sample
        self._ledger = ledger
        self._max_hits = max_hits
        self.evidence: list[Evidence] = []

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage,)

    async def on_messages(self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken) -> Response:
        blocks: list[str] = []
        seen: set[str] = set()
        for _asker, query in self._state.pending_queries():
            if query.lower() in seen:
                continue
            seen.add(query.lower())
            if self._answerer is None:
                blocks.append(f"QUERY: {one_line(query)}\nNo retrieval source is configured for this debate.")
                continue
            answering = asyncio.ensure_future(self._answerer.answer(query, self._sample, ledger=self._ledger))
            cancellation_token.link_future(answering)
            hits = (await answering)[: self._max_hits]
            known = {e.id for e in self.evidence}
            self.evidence.extend(h for h in hits if h.id not in known)
            found = "\n".join(h.quoted(600) for h in hits) if hits else "Nothing relevant was found."
            blocks.append(f"QUERY: {one_line(query)}\n{found}")
        self._state.answered_queries += len(seen)
        return Response(chat_message=TextMessage(content="\n\n".join(blocks) or "No queries.", source=self.name))

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        self.evidence = []
