"""One module per debate protocol; importing this package registers the built-in ones.

| protocol | module |
|---|---|
| ``async`` | :mod:`debates.protocols.asynchronous` |
| ``sync`` | :mod:`debates.protocols.sync` |
| ``judged`` | :mod:`debates.protocols.judged` |
| ``actor_skeptic`` | :mod:`debates.protocols.actor_skeptic` |
| ``disambiguation`` | :mod:`debates.protocols.disambiguation` |
| ``disambiguation_sync`` | :mod:`debates.protocols.disambiguation_sync` |
| ``cascade`` | :mod:`debates.protocols.cascade` |
| ``standard`` | :mod:`debates.protocols.standard` |
"""

from debates.protocols import actor_skeptic, asynchronous, cascade, disambiguation, disambiguation_sync, judged, standard, sync

__all__ = ["actor_skeptic", "asynchronous", "cascade", "disambiguation", "disambiguation_sync", "judged", "standard", "sync"]
