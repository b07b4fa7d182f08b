"""Per-sample state that the seats' turn policies share: the planner's decision and each best-of-N turn's selection.

It sits with the chat machinery because the debate state holds it; the turn policies in
:mod:`debates.turns` write to it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from debates.debate_engine.diagnostics import BestOfNTurn, CandidateScore, PlannerDecision, SavedCalls, SelectionDiagnostics


@dataclass
class TurnSelection:
    """What one best-of-N turn did, for the verdict's diagnostics."""

    speaker: str
    round: int
    n: int
    readable: int
    m_star: int
    chosen: int | None
    scores: list[CandidateScore]
    saved_reward_calls: int
    saved_critique_calls: int
    reward: str
    critic: str | None
    note: str = ""

    def report(self) -> BestOfNTurn:
        return BestOfNTurn(
            speaker=self.speaker, round=self.round, n=self.n, readable_candidates=self.readable, m_star=self.m_star,
            chosen=self.chosen, scores=list(self.scores),
            saved_calls=SavedCalls(reward=self.saved_reward_calls, critique=self.saved_critique_calls),
            reward=self.reward, critic=self.critic, note=self.note,
        )


@dataclass
class PlanDecision:
    level: int
    text: str
    error: str | None = None


@dataclass
class TurnPolicyState:
    """Per-sample state shared by the seats' turn policies: the planner's decision and each turn's selection.

    It lives in the debate state, which is built fresh for every sample, so a plan never carries
    over to the next sample, and is shared across seats, so the planner is asked once per sample.
    """

    plan: PlanDecision | None = None
    turns: list[TurnSelection] = field(default_factory=list)
    single_pass_turns: int = 0
    cache: dict[str, Any] = field(default_factory=dict)
    locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    def lock(self, key: str) -> asyncio.Lock:
        return self.locks.setdefault(key, asyncio.Lock())

    def reset(self) -> None:
        self.plan = None
        self.turns.clear()
        self.single_pass_turns = 0
        self.cache.clear()
        self.locks.clear()

    def planner_escalated(self) -> int | None:
        """1 when the planner sent this sample to best-of-N (an unreadable plan does too), 0 when it
        chose a single pass, None when no planner was asked (a configuration without one)."""
        return None if self.plan is None else int(self.plan.level == 1)

    def diagnostics(self) -> SelectionDiagnostics:
        saved_reward = sum(t.saved_reward_calls for t in self.turns)
        saved_critique = sum(t.saved_critique_calls for t in self.turns)
        return SelectionDiagnostics(
            escalated=bool(self.turns),
            planner=None if self.plan is None else PlannerDecision(level=self.plan.level, error=self.plan.error),
            best_of_n_turns=[t.report() for t in self.turns],
            single_pass_turns=self.single_pass_turns,
            m_star=[t.m_star for t in self.turns],
            saved_calls=SavedCalls(reward=saved_reward, critique=saved_critique, total=saved_reward + saved_critique),
        )
