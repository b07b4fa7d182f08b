"""Strategies: how one sample is checked end to end.

| strategy | module |
|---|---|
| ``debate`` (every group-chat protocol) | :mod:`debates.strategies.debate.strategy` |
| ``check`` | :mod:`debates.strategies.check` |
| ``self-consistency`` | :mod:`debates.strategies.self_consistency` |
| ``t2agent`` (tree search over forgery sources) | :mod:`debates.strategies.t2agent` |
| ``factguard`` (video posts) | :mod:`debates.strategies.factguard` |
| ``agentfact`` (planned, evidence-grounded fact-checking) | :mod:`debates.strategies.agentfact` |

Importing this package imports none of them. :mod:`debates.strategies.builtin` imports every
strategy (the strategy registry does, on its first lookup), and :mod:`debates.strategies.configs`
only their configuration models, which is all that reading a configuration needs.
"""
