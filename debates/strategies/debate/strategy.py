"""Strategy ``debate``: one debate configuration on one sample, in a fresh AutoGen group chat.

Flow: validate the sample, gather evidence, build a fresh team (so no history leaks between
samples), run the turns while streaming each one, then let the protocol decide. Everything that
differs between debate settings is the protocol's (:mod:`debates.strategies.debate.protocols`); this module is the
same for all of them.
"""

from __future__ import annotations

from typing import ClassVar

from autogen_agentchat.base import ChatAgent, Team

from debates.debate_engine.human import HumanSeat
from debates.debate_engine.preparation import SamplePreparation
from debates.debate_engine.seats import ModelSeat
from debates.debate_engine.state import DebateState, TurnRecord
from debates.groupchat.team import PolicyGroupChat
from debates.debate_engine.visibility import PeopleScreen
from debates.debate_engine.config import DebateConfig, SeatConfig
from debates.debate_engine.diagnostics import DebateDiagnostics
from debates.debate_engine.protocol import PROTOCOLS, DebateProtocol, debate_state
from debates.strategy import ConfiguredStrategy, RunContext, StrategyConfig, answer_taxonomy, strategy
from debates.turns import build_turn_policy
from debates.groupchat.run import run_team
from m3d_agents.evidence import Evidence
from m3d_agents.sample import Sample
from m3d_agents.tools.cards import ToolContext
from m3d_agents.tools.image_in_words import enable_image_describers
from m3d_agents.verdict import Verdict


def seat_backend_name(seat: SeatConfig, config: DebateConfig, ctx: RunContext) -> str:
    return ctx.backend_name(seat.backend, config.backend)


def build_seats(
    config: DebateConfig,
    protocol: DebateProtocol,
    state: DebateState,
    preparation: SamplePreparation,
    evidence: list[Evidence],
    ctx: RunContext,
) -> list[ChatAgent | Team]:
    """One participant per seat: a model seat, or a person where ``ctx.human_seats`` names the seat.

    Text-only seats see the image through the forensic and OCR tools' findings.
    """
    enable_image_describers()
    prepared = preparation.prepared
    humans = dict(ctx.human_seats)
    seats: list[ChatAgent | Team] = []
    setup = ctx.tool_setup(config)
    for seat in config.seats:
        if seat.name in humans:
            seats.append(HumanSeat(seat, config, protocol, state.taxonomy, preparation, evidence, humans[seat.name]))
            continue
        chosen = ctx.pool.get(seat_backend_name(seat, config, ctx), model=seat.model)
        create: dict[str, object] = {
            "temperature": seat.temperature if seat.temperature is not None else config.temperature,
            "seed": ctx.seed_for("seat", seat.name),
        }
        grammar = protocol.turn_grammar(seat, config, state.taxonomy) if chosen.takes_grammar else None
        # JSON turns as configured, except on a model whose prose the backend bounds (the embedded one): a JSON
        # string has no bound that llama.cpp's grammar can hold, so there the paper's text format is decoded instead.
        json_turns = config.structured_turns and not (grammar is not None and chosen.bounds_prose)
        seats.append(
            ModelSeat(
                seat,
                config,
                protocol,
                state.taxonomy,
                chosen.view(ctx.ledger, agent=seat.name, role=seat.role),
                preparation,
                evidence,
                build_turn_policy(seat.turn_policy),
                create,
                chosen.vision,
                turn_state=state.turn_state,
                structured=chosen.structured_args if json_turns else None,
                grammar=grammar,
                tools=ToolContext(prepared, ledger=ctx.ledger, backend=chosen, agent=seat.name, evidence=list(evidence),
                                  searchers=dict(ctx.searchers), setup=setup),
            )
        )
    return seats


@strategy("debate", diagnostics=DebateDiagnostics)
class DebateStrategy(ConfiguredStrategy[DebateConfig]):
    """A group-chat debate under one of the registered protocols."""

    config_model: ClassVar[type[StrategyConfig]] = DebateConfig

    def __init__(self, config: DebateConfig) -> None:
        super().__init__(config)
        self.protocol: DebateProtocol = PROTOCOLS.get(config.protocol)

    async def run(self, sample: Sample, ctx: RunContext) -> Verdict:
        config, protocol = self.config, self.protocol
        prepared = ctx.prepare(sample)
        answering = answer_taxonomy(config, protocol.answer_taxonomy(config, sample.taxonomy), sample)
        preparation = SamplePreparation(
            protocol, config, prepared, lambda seat: ctx.pool.get(seat_backend_name(seat, config, ctx), model=seat.model),
            ctx.ledger,
        )
        gathered = await ctx.gather_evidence(sample, dropped=True) if config.use_evidence else []
        kept = [e for e in gathered if e.kept]
        state = debate_state(protocol, config, answering)
        participants = build_seats(config, protocol, state, preparation, kept, ctx)
        extra = protocol.extra_participants(state, sample, ctx.ledger, ctx.query_answerer)
        team = PolicyGroupChat([*participants, *extra], state, protocol.next_speakers)
        # A person reads the stream as well as their seat's screen: it shows only what their seat may see.
        screen: PeopleScreen[TurnRecord] | None = (
            PeopleScreen([config.seat(name) for name in ctx.human_seats], config, protocol) if ctx.human_seats else None
        )
        await run_team(team, state, f"Debate on post {sample.id} begins.", ctx, f"the {config.name} debate on sample {sample.id}",
                       screen=screen)
        decision = protocol.decide(state)
        answered = [e for agent in extra for e in getattr(agent, "evidence", [])]
        cited = [e.id for e in kept] + [e.id for e in answered]
        backends = ",".join(sorted({seat_backend_name(s, config, ctx) for s in config.seats}))
        return ctx.verdict(
            sample,
            config,
            backend=backends,
            label=decision.label,
            label_taxonomy=answering.name,
            abstain_reason=decision.decided_by,
            rationale=decision.rationale,
            confidence=protocol.confidence(state, decision) if decision.label is not None else None,
            transcript=state.transcript(),
            findings=protocol.findings(state),
            evidence_ids=cited,
            evidence=gathered + answered,
            diagnostics=state.diagnostics(decision.label, decision.decided_by, preparation.prepared.descriptions),
        )
