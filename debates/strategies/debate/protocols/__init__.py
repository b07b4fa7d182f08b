"""One module per debate protocol; importing this package registers the built-in ones.

| protocol | module |
|---|---|
| ``async`` | :mod:`debates.strategies.debate.protocols.asynchronous` |
| ``sync`` | :mod:`debates.strategies.debate.protocols.sync` |
| ``judged`` | :mod:`debates.strategies.debate.protocols.judged` |
| ``actor_skeptic`` | :mod:`debates.strategies.debate.protocols.actor_skeptic` |
| ``disambiguation`` | :mod:`debates.strategies.debate.protocols.disambiguation` |
| ``disambiguation_sync`` | :mod:`debates.strategies.debate.protocols.disambiguation_sync` |
| ``cascade`` | :mod:`debates.strategies.debate.protocols.cascade` |
| ``chained_cascade`` | :mod:`debates.strategies.debate.protocols.chained_cascade` |
| ``standard`` | :mod:`debates.strategies.debate.protocols.standard` |
"""

from debates.strategies.debate.protocols import actor_skeptic, asynchronous, cascade, chained_cascade, disambiguation, disambiguation_sync, judged, standard, sync

__all__ = ["actor_skeptic", "asynchronous", "cascade", "chained_cascade", "disambiguation", "disambiguation_sync", "judged", "standard", "sync"]
