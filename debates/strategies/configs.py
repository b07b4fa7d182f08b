"""Every built-in strategy's configuration model, registered by importing its module: what
:data:`debates.strategy.CONFIG_MODELS` imports on its first lookup. These modules import no model
client, tool implementation or AutoGen, so reading a configuration stays quick (``m3d config``)."""

from debates.debate_engine import config as debate
from debates.strategies import check, self_consistency
from debates.strategies.agentfact import config as agentfact
from debates.strategies.factguard import config as factguard
from debates.strategies.t2agent import config as t2agent

__all__ = ["agentfact", "check", "debate", "factguard", "self_consistency", "t2agent"]
