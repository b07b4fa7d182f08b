"""``disambiguation``: concurrent rounds in which debaters may ask queries that retrieval answers.

Every agent is both actor and skeptic. After a round in which anyone asked a ``QUERY:``, the
retrieval desk (a participant that is not a seat) answers each query once, and the answers are
shown to every debater in the next round.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import prompts
from debates.chat.desk import RetrievalDesk
from debates.chat.state import DESK_NAME
from debates.protocol import protocol
from debates.protocols.base import JUDGE
from debates.protocols.sync import SyncDebate

if TYPE_CHECKING:
    from autogen_agentchat.base import ChatAgent

    from debates.chat.state import DebateState
    from debates.chat.visibility import SeatView, Seen
    from debates.config import DebateConfig, SeatConfig
    from m3d_agents.backends.metering import UsageLedger
    from m3d_agents.labels import Taxonomy
    from m3d_agents.sample import Sample
    from retrieval.interfaces import QueryAnswerer


@protocol("disambiguation")
class DisambiguationDebate(SyncDebate):
    """Concurrent rounds with queries answered by retrieval between rounds."""

    asks_queries: ClassVar[bool] = True

    def extra_participants(
        self, state: DebateState, sample: Sample, ledger: UsageLedger, answerer: QueryAnswerer | None
    ) -> list[ChatAgent]:
        return [RetrievalDesk(state, answerer, sample, ledger)]

    def next_speakers(self, state: DebateState) -> list[str] | None:
        last = state.turns[-1].speaker if state.turns else None
        if last is not None and last != DESK_NAME and state.pending_queries():
            if not self.consensus_reached(state) and state.completed_rounds() < state.config.max_rounds:
                return [DESK_NAME]
        return super().next_speakers(state)

    def visible(self, view: SeatView) -> list[Seen]:
        shown = super().visible(view)
        if view.seat.role != JUDGE and view.own_round > 1:
            shown.extend(view.desk_answers())
        return shown

    def system_prompt(self, seat: SeatConfig, config: DebateConfig, taxonomy: Taxonomy) -> str:
        if seat.role == JUDGE:
            return super().system_prompt(seat, config, taxonomy)
        return prompts.render(
            "debate/disambiguation_system", framing=self.framing(config), answer_format=self.answer_format(taxonomy),
            max_queries=config.max_queries_per_turn,
        )
