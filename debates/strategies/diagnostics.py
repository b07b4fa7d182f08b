"""Every built-in strategy's diagnostics model, registered under its strategy's name by importing this module: what
:data:`m3d_agents.diagnostics.DIAGNOSTICS_MODELS` imports on its first lookup (the package :mod:`debates` names it
there).

A verdict is read back far more often than a strategy runs (``m3d report``, ``m3d compare``, the web page), and its
diagnostics are typed by the model registered for their strategy; so the models live in modules that import no model
client or AutoGen, and this module registers them without importing the strategies. Each strategy also passes its
model to ``@strategy(name, diagnostics=...)``, which is how a strategy from outside the package registers its own
(registering the same model again changes nothing). A new built-in strategy adds its model here.
"""

from debates.debate_engine.diagnostics import DebateDiagnostics
from debates.strategies.agentfact.diagnostics import AgentFactDiagnostics
from debates.strategies.check import CheckDiagnostics
from debates.strategies.factguard.diagnostics import FactGuardDiagnostics
from debates.strategies.self_consistency import SelfConsistencyDiagnostics
from debates.strategies.t2agent.diagnostics import T2AgentDiagnostics
from m3d_agents.diagnostics import StrategyDiagnostics, register_diagnostics

BUILT_IN: tuple[type[StrategyDiagnostics], ...] = (
    AgentFactDiagnostics, CheckDiagnostics, DebateDiagnostics, FactGuardDiagnostics, SelfConsistencyDiagnostics,
    T2AgentDiagnostics,
)

for model in BUILT_IN:
    register_diagnostics(model.model_fields["strategy"].default, model)
