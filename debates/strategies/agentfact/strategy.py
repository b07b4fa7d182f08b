"""Strategy ``agentfact``: AgentFact's planned, evidence-grounded fact-checking workflow on one sample.

The agents are hosted in the project's group chat (:class:`~debates.groupchat.team.PolicyGroupChat`)
under a deterministic policy over the run's board, as AgentFact's controller is deterministic:
the chat gives streaming of every finished turn, cancellation in the middle of a model call, and
a participant seat per agent, while the policy, the board and the agents stay plain, tested code.
"""

from __future__ import annotations

from typing import ClassVar

from debates.groupchat.team import PolicyGroupChat
from debates.strategies.agentfact.board import Board
from debates.strategies.agentfact.diagnostics import AgentFactDiagnostics
from debates.strategies.agentfact.explain import diagnostics_of, evidence_of, explanation_of, findings_of
from debates.strategies.agentfact.participants import Workflow, build_participants
from debates.strategies.agentfact.config import AgentFactConfig, Role
from debates.strategies.agentfact.state import AgentFactState, speakers
from debates.groupchat.run import run_team
from debates.strategy import ConfiguredStrategy, RunContext, StrategyConfig, answer_taxonomy, strategy
from m3d_agents.backends.config import ToolBinding
from m3d_agents.errors import InputError
from m3d_agents.labels import get_taxonomy, is_subset
from m3d_agents.sample import Sample
from m3d_agents.tools.forensics.learned import NAME as DETECTOR
from m3d_agents.verdict import Verdict

ANSWER_TAXONOMY = "factcheck3"


@strategy("agentfact", diagnostics=AgentFactDiagnostics)
class AgentFact(ConfiguredStrategy[AgentFactConfig]):
    """Plan, retrieve, screen, reason, explain: the five AgentFact agents under their controller."""

    config_model: ClassVar[type[StrategyConfig]] = AgentFactConfig

    async def run(self, sample: Sample, ctx: RunContext) -> Verdict:
        config = self.config
        answer_taxonomy(config, ANSWER_TAXONOMY, sample)
        gold = list(ctx.gold_evidence) if config.setting == "evidence_bounded" else []
        if config.setting == "evidence_bounded" and not gold:
            raise InputError(
                "evidence", f"the {config.name} configuration reasons over a data set's own evidence, and none came with "
                f"sample {sample.id} (m3d evaluate passes RW-Post's)",
            )
        prepared = ctx.prepare(sample)
        state = AgentFactState(lambda: Board.start(config, sample.text, has_images=bool(prepared.images), gold=gold))
        backends: dict[Role, str] = {seat.role: ctx.backend_name(seat.backend, config.backend) for seat in config.seats}
        flow = Workflow(
            config=config, board=state.board, sample=sample, prepared=prepared, ctx=ctx,
            backends={role: ctx.pool.get(name, model=config.seat(role).model) for role, name in backends.items()},
            notes=state.notes, detector=ctx.tool_setup(config).bindings.get(DETECTOR) or ToolBinding(),
        )
        team = PolicyGroupChat(list(build_participants(flow)), state, speakers)
        await run_team(team, state, f"Check post {sample.id}.", ctx, f"the {config.name} workflow on sample {sample.id}")
        board = state.board
        explanation = explanation_of(board)
        label = answer_label(board.explanation, sample.taxonomy)
        evidence, shown = evidence_of(board)
        reason = f"the explainer's answer could not be read after {board.explanation_attempts} attempts: {board.explanation_error}"
        return ctx.verdict(
            sample, config, backend=",".join(sorted(set(backends.values()))), label=label, label_taxonomy=ANSWER_TAXONOMY,
            abstain_reason=reason if board.explanation_attempts else f"the run ended before the explainer spoke ({board.stop_reason})",
            confidence=explanation.confidence_level / 5 if explanation and explanation.confidence_level else None,
            rationale=explanation.reasoning_logic if explanation else "", findings=findings_of(board, explanation, label),
            transcript=state.transcript(), evidence_ids=shown, evidence=evidence, explanation=explanation,
            diagnostics=diagnostics_of(board),
        )


def answer_label(explanation: dict[str, object] | None, taxonomy: str) -> str | None:
    """The verdict's label in factcheck3: the three-class label where the sample's taxonomy has the three
    ratings (RW-Post, CR+, Mocheg); on a two-label data set (out-of-context, real or fake), the paper's
    coarse label (paper lines 302-306, App. D): true, or false for anything not shown true, so that
    unproven counts against the claim there as it does in the explainer's two-class label."""
    if explanation is None:
        return None
    three = str(explanation["label_3class"])
    if is_subset(get_taxonomy(ANSWER_TAXONOMY), get_taxonomy(taxonomy)):
        return three
    return "true" if three == "true" else "false"
