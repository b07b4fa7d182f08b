"""Small, valid diagnostics of a strategy for tests that read rows (reports, tables, metrics)."""

from __future__ import annotations

from debates.strategies.agentfact.diagnostics import AgentFactDiagnostics
from debates.strategies.t2agent.diagnostics import NodeReport, PriorReport, SearchReport, T2AgentDiagnostics, ToolReport


def t2agent_diagnostics(iterations: int) -> T2AgentDiagnostics:
    """A T2Agent search of ``iterations`` iterations over one subtask that found nothing."""
    root = NodeReport(id=0, kind="root", subtask=None, depth=0, visits=iterations, value=0.0)
    search = SearchReport(
        uct="eq3", settings={}, priors=PriorReport(source="uniform", values={"text": 1.0}), iterations=iterations,
        stop_reason=f"K iterations spent (K = {iterations})", pruned=[], early_stop=None, decided_by="fusion", p_real=1.0,
        p_fake={}, tree_size=1, dead_steps=0, missing_scores={}, reused_scores=0, unscored_steps=0, tools=ToolReport(),
        subtasks=[], path_per_iteration=[[0]] * iterations, tree=root,
    )
    return T2AgentDiagnostics(iterations=iterations, decided_by="fusion", stop_reason=search.stop_reason, search=search)


def agentfact_diagnostics(leakage: dict[str, int]) -> AgentFactDiagnostics:
    """An open-web AgentFact run whose leakage rules dropped ``leakage`` items, by rule."""
    return AgentFactDiagnostics(setting="open_web", steps=3, plans=1, leakage=leakage)
