"""Strategy ``self-consistency``: N independent single checks, a majority vote, agreement as confidence.

Why it is here: a debate costs several model calls per post, so the fair baseline for a debate is
not one check but as many independent checks as the debate makes calls, with their majority
answer (self-consistency). ``m3d compare runs/self-consistency runs/async`` then separates what
the debate's interaction adds from what more samples of the same model add.

The N checks are sampled concurrently at ``temperature`` with distinct seeds, so they differ even
on a server that caches or decodes greedily by default. Choices where the method leaves room,
all configurable:

- the confidence is the agreement rate: the share of all N checks that gave the majority label
  (an unreadable check counts as disagreeing, so a run cannot look surer by failing to answer);
- a tie between labels abstains, as a debate's majority vote does (``on_tie: abstain``);
- when fewer than ``min_readable`` checks are readable, the strategy abstains.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import ClassVar, Literal

from pydantic import Field

from debates.strategy import CallBudget, ConfiguredStrategy, RunContext, StrategyConfig, configuration, strategy, strategy_field
from m3d_agents.labels import get_taxonomy
from m3d_agents.config_types import Temperature
from m3d_agents.diagnostics import StrategyDiagnostics
from m3d_agents.sample import Sample
from m3d_agents.verdict import Finding, Verdict


@configuration("self-consistency")
class SelfConsistencyConfig(StrategyConfig):
    strategy: Literal["self-consistency"] = strategy_field("self-consistency")
    n: int = Field(9, ge=1, le=64, description="independent checks per post")
    temperature: Temperature = Field(0.7, description="sampling temperature of every check")
    min_readable: int = Field(1, ge=1, description="abstain when fewer checks than this give a readable answer")
    on_tie: Literal["abstain"] = Field(
        "abstain", description="what a tie between the top labels gives: an abstention (the only choice, as a debate's majority vote)"
    )

    def call_budget(self) -> CallBudget:
        return CallBudget(calls=self.n, counts="n independent checks")


def majority(labels: list[str]) -> str | None:
    """The most common label; None on a tie for the top or when there is none."""
    ranked = Counter(labels).most_common()
    if not ranked or (len(ranked) > 1 and ranked[0][1] == ranked[1][1]):
        return None
    return ranked[0][0]


class SelfConsistencyDiagnostics(StrategyDiagnostics):
    strategy: Literal["self-consistency"] = "self-consistency"
    legacy_keys: ClassVar[frozenset[str]] = frozenset({"votes", "readable", "n"})
    votes: dict[str, int] = Field(description="readable checks per label")
    readable: int = Field(ge=0, description="checks whose answer could be read")
    n: int = Field(ge=1, description="checks asked")


@strategy("self-consistency", diagnostics=SelfConsistencyDiagnostics)
class SelfConsistency(ConfiguredStrategy[SelfConsistencyConfig]):
    """N independent checks; the majority label wins; the agreement rate is the confidence."""

    config_model: ClassVar[type[StrategyConfig]] = SelfConsistencyConfig

    async def run(self, sample: Sample, ctx: RunContext) -> Verdict:
        from debates.strategies.checker import CheckerAgent, checked, checker_turn  # on a run only: reading the configuration imports no AutoGen

        config = self.config
        prepared = ctx.prepare(sample)
        taxonomy = get_taxonomy(sample.taxonomy)
        backend_name, backend = ctx.backend_for(config)
        evidence = await ctx.gather_evidence(sample)
        agents = [
            CheckerAgent(
                f"check_{i + 1}", backend, ctx.ledger, prepared, taxonomy, retries=config.parse_retries,
                sampling={"temperature": config.temperature, "seed": ctx.seed_for("check", i)}, evidence=evidence,
            )
            for i in range(config.n)
        ]
        await asyncio.gather(*(agent.run(task=f"Check post {sample.id}.") for agent in agents))
        turns = []
        labels: list[str] = []
        for agent in agents:
            assert agent.answer is not None
            turn = checker_turn(agent.name, agent.answer)
            turns.append(turn)
            await ctx.emit(turn)
            if turn.stance is not None:
                labels.append(turn.stance)
        votes = dict(Counter(labels))
        diagnostics = SelfConsistencyDiagnostics(votes=votes, readable=len(labels), n=config.n)
        winner = majority(labels) if len(labels) >= config.min_readable else None
        if winner is None:
            reason = (
                f"only {len(labels)} of {config.n} checks were readable" if len(labels) < config.min_readable
                else f"no majority among the checks: {votes}"
            )
            return ctx.verdict(sample, config, backend=backend_name, label=None, abstain_reason=reason,
                               transcript=turns, diagnostics=diagnostics)
        posts = [post for post in (checked(a.answer) for a in agents) if post is not None]
        rationale = next(post.rationale for post in posts if post.label == winner)
        return ctx.verdict(
            sample, config, backend=backend_name, label=winner, confidence=round(votes[winner] / config.n, 4),
            rationale=rationale, findings=[Finding(modality="overall", label=winner, summary=rationale)],
            transcript=turns, evidence_ids=[e.id for e in evidence], diagnostics=diagnostics.model_copy(update={"decided_by": "majority"}),
        )
