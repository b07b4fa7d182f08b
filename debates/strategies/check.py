"""Strategy ``check``: one agent looks at the post and answers with a label and a confidence.

It is the baseline that every debate is compared against, and the smallest end-to-end path
through sample validation, a real backend, structured output, parsing and accounting.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import Field

from debates.strategy import CallBudget, ConfiguredStrategy, RunContext, StrategyConfig, configuration, strategy, strategy_field
from m3d_agents.labels import get_taxonomy
from m3d_agents.diagnostics import StrategyDiagnostics
from m3d_agents.sample import Sample
from m3d_agents.verdict import Finding, Verdict


@configuration("check")
class CheckConfig(StrategyConfig):
    strategy: Literal["check"] = strategy_field("check")

    def call_budget(self) -> CallBudget:
        return CallBudget(calls=1, counts="one check")


class CheckDiagnostics(StrategyDiagnostics):
    strategy: Literal["check"] = "check"
    legacy_keys: ClassVar[frozenset[str]] = frozenset({"attempts"})
    attempts: int = Field(ge=0, description="model calls the single check made, re-asks included")


@strategy("check", diagnostics=CheckDiagnostics)
class Check(ConfiguredStrategy[CheckConfig]):
    """One agent, one answer."""

    config_model: ClassVar[type[StrategyConfig]] = CheckConfig

    async def run(self, sample: Sample, ctx: RunContext) -> Verdict:
        """Validate the sample, ask one agent, and return its verdict or a recorded abstention.

        Input errors and backend errors propagate: they are the caller's to report, not a verdict.
        """
        from debates.strategies.checker import CheckerAgent, checked, checker_turn  # on a run only: reading CheckConfig imports no AutoGen

        prepared = ctx.prepare(sample)
        taxonomy = get_taxonomy(sample.taxonomy)
        backend_name, backend = ctx.backend_for(self.config)
        evidence = await ctx.gather_evidence(sample)
        agent = CheckerAgent("checker", backend, ctx.ledger, prepared, taxonomy, retries=self.config.parse_retries, evidence=evidence)
        await agent.run(task=f"Check post {sample.id}.")
        answer = agent.answer
        assert answer is not None
        turn = checker_turn("checker", answer)
        await ctx.emit(turn)
        diagnostics = CheckDiagnostics(attempts=answer.attempts)
        post = checked(answer)
        if post is None:
            return ctx.verdict(
                sample, self.config, backend=backend_name, label=None, transcript=[turn], diagnostics=diagnostics,
                abstain_reason=f"unreadable answer after {answer.attempts} attempts: {answer.error}",
            )
        return ctx.verdict(
            sample, self.config, backend=backend_name, label=post.label, confidence=post.confidence,
            rationale=post.rationale, findings=[Finding(modality="overall", label=post.label, summary=post.rationale)],
            transcript=[turn], evidence_ids=[e.id for e in evidence],
            diagnostics=diagnostics,
        )
