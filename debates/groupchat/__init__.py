"""The AutoGen group chat every strategy runs its agents in: the team, its quiet runtime, and the loop that runs it.

AgentFact, FactGuard and the debates all run a :class:`~debates.groupchat.team.PolicyGroupChat`
through :func:`~debates.groupchat.run.run_team`; what is particular to debates (seats, protocols,
visibility, a person's seat) lives in :mod:`debates.debate_engine`.
"""
