"""Every built-in strategy, registered by importing its module: what :data:`debates.strategy.STRATEGIES`
imports on its first lookup. A new strategy adds its module here and its configuration model to
:mod:`debates.strategies.configs`."""

from debates.strategies import check, self_consistency
from debates.strategies.agentfact import strategy as agentfact
from debates.strategies.debate import strategy as debate
from debates.strategies.factguard import strategy as factguard
from debates.strategies.t2agent import strategy as t2agent

__all__ = ["agentfact", "check", "debate", "factguard", "self_consistency", "t2agent"]
