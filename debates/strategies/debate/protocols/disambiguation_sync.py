"""``disambiguation_sync``: the disambiguation debate on concurrent rounds.

Everyone answers at once in each round and sees the previous round only; the retrieval desk
answers the round's queries before the next round. This was the project's first reading of the
setting; LLM-Consensus does not say its disambiguation debate ran differently from its others, so
the ``disambiguation`` protocol now takes turns and this one is kept as an option.
"""

from __future__ import annotations

from debates.debate_engine.protocol import protocol
from debates.strategies.debate.protocols.disambiguation import AsksQueries
from debates.strategies.debate.protocols.sync import SyncDebate


@protocol("disambiguation_sync")
class SyncDisambiguationDebate(AsksQueries, SyncDebate):
    """Concurrent rounds with queries answered by retrieval between rounds."""
