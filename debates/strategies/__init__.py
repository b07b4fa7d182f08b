"""Strategies: how one sample is checked end to end. Importing this package registers the built-in ones.

| strategy | module |
|---|---|
| ``debate`` (every group-chat protocol) | :mod:`debates.strategies.debate.strategy` |
| ``check`` | :mod:`debates.strategies.check` |
| ``self-consistency`` | :mod:`debates.strategies.self_consistency` |
| ``t2agent`` (tree search over forgery sources) | :mod:`debates.strategies.t2agent` |
| ``factguard`` (video posts) | :mod:`debates.strategies.factguard` |
| ``agentfact`` (planned, evidence-grounded fact-checking) | :mod:`debates.strategies.agentfact` |
"""

from debates.strategies import agentfact, check, debate, factguard, self_consistency, t2agent

__all__ = ["agentfact", "check", "debate", "factguard", "self_consistency", "t2agent"]
