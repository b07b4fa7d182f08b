"""Strategies: how one sample is checked end to end. Importing this package registers the built-in ones.

| strategy | module |
|---|---|
| ``debate`` (every group-chat protocol) | :mod:`debates.strategies.debate` |
| ``check`` | :mod:`debates.strategies.check` |
| ``self-consistency`` | :mod:`debates.strategies.self_consistency` |
| ``agentfact`` | :mod:`debates.strategies.agentfact` |
"""

from debates.strategies import agentfact, check, debate, self_consistency

__all__ = ["agentfact", "check", "debate", "self_consistency"]
