"""How a sample is checked, in layers that import only downward.

| layer | what |
|---|---|
| :mod:`debates.cli`, :mod:`debates.ui` | front-ends: the ``m3d`` command line, notebook helpers, the web page |
| :mod:`debates.eval` | the harness: running batches (``run``), scoring them (``score``), the papers' tables (``papers``) |
| :mod:`debates.strategies` | one module or subpackage per strategy: how one sample is checked end to end |
| :mod:`debates.turns` | turn policies for any seat (single, best-of-N, planned, ReAct) with rewards and critics |
| :mod:`debates.chat` | the policy-driven AutoGen group chat that strategies share, with its contracts |
| kernel | :mod:`debates.strategy` (the Strategy contract and RunContext), :mod:`debates.config_loader` (finding and validating configurations), :mod:`debates.session` (one run session for every front-end) |

Importing the package registers the built-in plug-ins (protocols, turn policies with their
rewards and critics, strategies), so every registry is complete whichever module is used first.
"""

from debates import strategies, turns

__all__ = ["strategies", "turns"]
