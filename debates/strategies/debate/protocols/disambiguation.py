"""``disambiguation``: debaters who may ask queries that retrieval answers, on the async schedule.

Every agent is both actor and skeptic. Debaters speak in turn, as in ``async``; after a turn in
which someone asked a ``QUERY:``, the retrieval desk (a participant that is not a seat) answers
each query once, and every debater sees the answers from its second round on. Queries asked in
the very last turns, when nobody is left to read the answers, go unanswered. LLM-Consensus runs
all its settings on this turn-taking schedule, so a comparison with ``async`` changes one thing
only; ``disambiguation_sync`` (:mod:`debates.strategies.debate.protocols.disambiguation_sync`) keeps the concurrent
rounds as an option.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

import prompts
from m3d_agents.fence import render_prompt
from debates.debate_engine.state import DESK_NAME
from debates.debate_engine.protocol import protocol
from debates.strategies.debate.protocols.base import JUDGE, DebateDefaults

if TYPE_CHECKING:
    from autogen_agentchat.base import ChatAgent

    from debates.debate_engine.state import DebateState
    from debates.debate_engine.visibility import SeatView, Seen
    from debates.debate_engine.config import DebateConfig, SeatConfig
    from m3d_agents.backends.metering import UsageLedger
    from m3d_agents.labels import Taxonomy
    from m3d_agents.sample import Sample
    from retrieval.interfaces import QueryAnswerer


class AsksQueries(DebateDefaults):
    """What both disambiguation schedules share: the desk, its turn, who sees its answers, the prompt."""

    asks_queries: ClassVar[bool] = True

    def extra_participants(
        self, state: DebateState, sample: Sample, ledger: UsageLedger, answerer: QueryAnswerer | None
    ) -> list[ChatAgent]:
        from debates.debate_engine.desk import RetrievalDesk  # an AutoGen agent: imported by a run, not by reading a configuration

        return [RetrievalDesk(state, answerer, sample, ledger)]

    def next_speakers(self, state: DebateState) -> list[str] | None:
        last = state.turns[-1].speaker if state.turns else None
        # The desk answers only while the debate goes on: after the last round nobody would read its answers.
        if last is not None and last != DESK_NAME and state.pending_queries() and self.stops.reason(state) is None:
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
        return render_prompt(
            "debate/disambiguation_system", framing=self.framing(config), answer_format=self.answer_format(taxonomy),
            query_limit=" " + prompts.render("debate/query_limit", max_queries=config.max_queries_per_turn)
            if config.max_queries_per_turn is not None else "",
        )


@protocol("disambiguation")
class DisambiguationDebate(AsksQueries):
    """Debaters in turn, with queries answered by retrieval between turns."""
