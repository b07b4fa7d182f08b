"""How a sample is checked, in layers that import only downward.

| layer | what |
|---|---|
| :mod:`debates.cli`, :mod:`debates.ui` | front-ends: the ``m3d`` command line, notebook helpers, the web page |
| :mod:`debates.eval` | the harness: running batches (``run``), scoring them (``score``), the papers' tables (``papers``) |
| :mod:`debates.strategies` | one module or subpackage per strategy: how one sample is checked end to end |
| :mod:`debates.turns` | turn policies for any seat (single, best-of-N, planned, ReAct) with rewards and critics |
| :mod:`debates.debate_engine` | the policy-driven AutoGen group chat that strategies share, with its contracts |
| kernel | :mod:`debates.strategy` (the Strategy contract and RunContext), :mod:`debates.config_loader` (finding and validating configurations), :mod:`debates.session` (one run session for every front-end) |

Importing the package imports no strategy: each registry (strategies, configuration models,
protocols, turn policies, diagnostics models) imports the modules of its built-in plug-ins on its
first lookup, so every registry is complete whichever module is used first, and a command that only
reads configurations (``m3d config``, ``m3d seats``) never imports what running them takes. The
diagnostics registry belongs to :mod:`m3d_agents`, which knows no strategy, so this package tells it
where its built-in strategies' diagnostics models are (:mod:`debates.strategies.diagnostics`), for
every verdict read back by any module of the package.
"""

from m3d_agents.diagnostics import DIAGNOSTICS_MODELS

DIAGNOSTICS_MODELS.import_on_lookup("debates.strategies.diagnostics")
