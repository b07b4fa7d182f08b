"""What debate protocols share: the defaults of a debate between debaters, with an optional judge.

:class:`DebateDefaults` implements :class:`debates.debate_engine.protocol.DebateProtocol` for the common case:
debaters answer with a label, first answers are independent, consensus over every debater's latest
answer stops the debate, a majority decides otherwise (a tie abstains), and a judge seat, when the
configuration has one, sees the whole transcript but never the evidence. Each protocol module
overrides only what makes its setting different.

A configuration is validated by its protocol (``m3d config``, ``m3d seats`` do it for every one), so
the protocol modules import what only a run needs (the post's images, the retrieval desk, the image
describers) inside the methods that use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, ClassVar

import prompts
from m3d_agents.fence import render_prompt
from debates.debate_engine.reading import StanceReading, read_message
from debates.debate_engine.protocol import PROTOCOLS
from debates.debate_engine.protocol import DebateOutcome
from debates.debate_engine.stopping import Consensus, FinalAnswer, MaxRounds, StopRule
from m3d_agents.evidence import evidence_block
from m3d_agents.grammars import Grammar, answer_lines, prose_only
from m3d_agents.verdict import Finding

if TYPE_CHECKING:
    from autogen_agentchat.base import ChatAgent

    from debates.debate_engine.state import DebateState
    from debates.debate_engine.visibility import SeatView, Seen
    from debates.debate_engine.config import DebateConfig, SeatConfig
    from m3d_agents.backends.factory import Backend
    from m3d_agents.backends.metering import UsageLedger
    from m3d_agents.evidence import Evidence
    from m3d_agents.labels import Taxonomy
    from m3d_agents.media.images import PreparedSample
    from m3d_agents.sample import Sample
    from retrieval.interfaces import QueryAnswerer

JUDGE = "judge"
DEBATER = "debater"
JUDGE_DECIDED = FinalAnswer(JUDGE, "the judge decided")


def owner_of(role: str) -> str | None:
    """The protocol whose seats may take ``role``, for error messages that say where a role belongs."""
    for name in PROTOCOLS:
        if role in getattr(PROTOCOLS.get(name), "roles", ()):
            return name
    return None


class DebateDefaults:
    """Debaters answer in rounds; consensus stops the debate; otherwise a majority or the judge decides."""

    name: str = ""
    roles: ClassVar[frozenset[str]] = frozenset({DEBATER, JUDGE})
    previous_round_only: ClassVar[bool] = False
    """Whether rounds are concurrent: a debater sees the others' answers of the previous round only,
    and agreement counts only where a round is complete (see :meth:`DebateState.consensus_turn`)."""
    asks_queries: ClassVar[bool] = False
    stops: ClassVar[StopRule] = Consensus() | MaxRounds()
    """When the debaters are done (:mod:`debates.debate_engine.stopping`): consensus, else the last round."""

    # --- seats ---------------------------------------------------------------------------------

    def validate(self, config: DebateConfig) -> None:
        roles = [s.role for s in config.seats]
        foreign = sorted({r for r in roles if r not in self.roles})
        if foreign:
            owners = sorted({owner_of(r) or "no" for r in foreign})
            raise ValueError(f"roles {foreign} belong to the {' or '.join(owners)} protocol, not {self.name}")
        if DEBATER in self.roles and DEBATER not in roles:
            raise ValueError(f"protocol {self.name} needs at least one debater")

    def deciders(self, config: DebateConfig) -> list[str]:
        return [s.name for s in config.seats if s.role == DEBATER]

    def answer_taxonomy(self, config: DebateConfig, sample_taxonomy: str) -> str:
        return config.taxonomy or sample_taxonomy

    def extra_participants(
        self, state: DebateState, sample: Sample, ledger: UsageLedger, answerer: QueryAnswerer | None
    ) -> list[ChatAgent]:
        return []

    async def prepare(
        self, config: DebateConfig, seat: SeatConfig, prepared: PreparedSample,
        backend_for: Callable[[SeatConfig], Backend], ledger: UsageLedger,
    ) -> PreparedSample:
        return prepared

    def most_turns(self, config: DebateConfig) -> dict[str, int]:
        """Every seat speaks once a round; a judge speaks once."""
        return {s.name: 1 if s.role == JUDGE else config.max_rounds for s in config.seats}

    def calls_before_turns(self, config: DebateConfig) -> int:
        return 0

    # --- turn order ----------------------------------------------------------------------------

    def next_speakers(self, state: DebateState) -> list[str] | None:
        """One debater at a time, in seat order, once per round (the ``async`` schedule), until :attr:`stops`."""
        reason = self.stops.reason(state)
        if reason is not None:
            return self.close(state, reason)
        debaters = state.seats_with_role(DEBATER)
        fewest = min(state.rounds_of(name) for name in debaters)
        return [next(name for name in debaters if state.rounds_of(name) == fewest)]

    def needs_judge(self, state: DebateState) -> bool:
        return state.config.on_no_consensus == "judge" and state.consensus() is None

    def close(self, state: DebateState, reason: str) -> list[str] | None:
        """After the debaters are done: hand over to the judge if the rule says so, else stop."""
        judges = state.seats_with_role(JUDGE)
        if judges and self.needs_judge(state) and state.rounds_of(judges[0]) == 0:
            return [judges[0]]
        decided = JUDGE_DECIDED.reason(state)
        state.stop_reason = f"{reason}; {decided}" if decided is not None else reason
        return None

    # --- what a seat sees and is told ------------------------------------------------------------

    def visible(self, view: SeatView) -> list[Seen]:
        if view.seat.role == JUDGE:
            return [s for s in view.seen if view.role_of(s.speaker) == DEBATER]
        round_now = view.own_round
        if round_now == 1:
            return []
        shown: list[Seen] = []
        own = view.latest(view.seat.name)
        if own is not None:
            shown.append(own)
        for seat in view.config.seats:
            if seat.role == DEBATER and seat.name != view.seat.name:
                peer = view.latest(seat.name, before_round=round_now if self.previous_round_only else None)
                if peer is not None:
                    shown.append(peer)
        return shown

    def instruction(self, view: SeatView) -> str:
        """Round 1 is independent; round 2, where the discussion starts, has its own prompt; later
        rounds share one. The other side is presented as the framing says (see :func:`other_side`)."""
        if view.seat.role == JUDGE:
            return prompts.render("debate/judge_turn", history=view.history(self.visible(view)))
        if view.own_round == 1:
            return prompts.load("debate/turn_first")
        template = "debate/turn_first_debate" if view.own_round == 2 else "debate/turn_later"
        return prompts.render(template, round=view.own_round, history=view.history(self.visible(view)), **other_side(view))

    def framing(self, config: DebateConfig) -> str:
        return prompts.load(f"debate/framing_{config.framing}")

    def answer_format(self, taxonomy: Taxonomy) -> str:
        return prompts.render("common/answer_format", labels=", ".join(taxonomy.labels))

    def system_prompt(self, seat: SeatConfig, config: DebateConfig, taxonomy: Taxonomy) -> str:
        if seat.role == JUDGE:
            return prompts.render("debate/judge_system", answer_format=self.answer_format(taxonomy))
        return render_prompt("debate/debater_system", framing=self.framing(config), answer_format=self.answer_format(taxonomy))

    def post_block(self, seat: SeatConfig, prepared: PreparedSample, evidence: list[Evidence], vision: bool) -> str:
        """The post, then (never for the judge, which must decide from the debate alone) the evidence."""
        if seat.role == JUDGE:
            return prompts.render("debate/task", text=prepared.sample.text, image_context="", evidence="").strip()
        return prompts.render(
            "debate/task", text=prepared.sample.text, image_context=self.image_context(seat, prepared, vision),
            evidence=evidence_block(evidence),
        ).strip()

    def image_context(self, seat: SeatConfig, prepared: PreparedSample, vision: bool) -> str:
        """What stands for the images in a seat's prompt (see :func:`~m3d_agents.media.post_content.image_context`)."""
        from m3d_agents.media.post_content import image_context  # on a run: reading a configuration imports no AutoGen

        return image_context(prepared, vision)

    def sees_images(self, seat: SeatConfig) -> bool:
        return seat.role != JUDGE

    def answers_required(self, seat: SeatConfig, config: DebateConfig) -> bool:
        return True

    def structured_turn(self, seat: SeatConfig, config: DebateConfig) -> bool | None:
        return self.asks_queries if self.answers_required(seat, config) else None

    def read_turn(self, text: str, role: str, taxonomy: Taxonomy, max_queries: int | None) -> StanceReading:
        return read_message(text, taxonomy, max_queries)

    def turn_grammar(self, seat: SeatConfig, config: DebateConfig, taxonomy: Taxonomy) -> Grammar | None:
        """The answer lines (with the query lines where the protocol asks for queries) for a seat that must
        answer; prose for one that argues without answering."""
        if not self.answers_required(seat, config):
            return prose_only()
        return answer_lines(taxonomy.labels, config.max_queries_per_turn if self.asks_queries else 0)

    # --- outcome -----------------------------------------------------------------------------------

    def decide(self, state: DebateState) -> DebateOutcome:
        judges = state.seats_with_role(JUDGE)
        judge_turn = state.latest(judges[0]) if judges else None
        if judge_turn is not None:
            if judge_turn.reading.label is None:
                return DebateOutcome(None, f"the judge's answer could not be read: {judge_turn.reading.error}", judge_turn.text)
            return DebateOutcome(judge_turn.reading.label, "judge", judge_turn.text)
        consensus = state.consensus()
        if consensus is not None:
            return DebateOutcome(consensus, "consensus", rationale_for(state, consensus))
        if not state.has_quorum():
            share = state.config.majority_quorum
            return DebateOutcome(
                None, f"no consensus and no quorum for a majority: {state.readable_votes()} of {len(state.deciders)} "
                f"deciders gave a readable answer (more than {share:.0%} needed): {answers_in_words(state.latest_labels())}", "")
        majority = state.majority()
        if majority is None:
            return DebateOutcome(None, f"no consensus and no majority: {answers_in_words(state.latest_labels())}", "")
        return DebateOutcome(majority, "majority", rationale_for(state, majority))

    def confidence(self, state: DebateState, decision: DebateOutcome) -> float:
        """Agreement among the deciders, scaled by the confidence they stated (when they stated one).

        A judge's own stated confidence (or 1.0 when it gave none) is used: its answer alone decides.
        """
        if decision.decided_by == JUDGE:
            return stated_or_one(state, state.seats_with_role(JUDGE)[0])
        latest = [state.latest(name) for name in state.deciders]
        agreeing = [t for t in latest if t is not None and t.reading.label == decision.label]
        share = len(agreeing) / max(1, len(latest))
        stated = [t.reading.confidence for t in agreeing if t.reading.confidence is not None]
        return round(share * (sum(stated) / len(stated) if stated else 1.0), 4)

    def findings(self, state: DebateState) -> list[Finding]:
        return [
            Finding(modality="overall", label=t.reading.label, summary=t.text[:400])
            for t in (state.latest(name) for name in state.deciders)
            if t is not None
        ]


class SoloProtocol(DebateDefaults):
    """Seats that each judge alone: every seat decides, nobody sees another's message, and every
    turn is one assessment (the single classifier, the cascade's modality agents)."""

    def deciders(self, config: DebateConfig) -> list[str]:
        return [s.name for s in config.seats]

    def most_turns(self, config: DebateConfig) -> dict[str, int]:
        return {s.name: 1 for s in config.seats}

    def visible(self, view: SeatView) -> list[Seen]:
        return []

    def instruction(self, view: SeatView) -> str:
        return prompts.load("common/assess_turn")


def other_side(view: SeatView) -> dict[str, str]:
    """The words a turn prompt uses for the other side, which differ between framings only in who it is.

    Under the ``human`` framing the other side's arguments are presented as the user's own ("this
    is what I think ... Do you agree with me?"), as LLM-Consensus does; under ``ai`` as another
    model's. A person is told the other seats' names.
    """
    several = len(view.peers()) > 1
    if view.for_person:
        names = " and ".join(view.peers()) or "the others"
        return {"their_view": f"this is what {names} said", "them": names}
    if view.config.framing == "human":
        if several:
            return {"their_view": "this is what the other people in this conversation think", "them": "them"}
        return {"their_view": "this is what I think", "them": "me"}
    if several:
        return {"their_view": "this is what the other AI models think", "them": "them"}
    return {"their_view": "this is what the other AI model thinks", "them": "it"}


def answers_in_words(labels: dict[str, str | None]) -> str:
    """The deciders' latest answers as a sentence: "agent_a answered fake, agent_b answered real"."""
    said = [f"{seat} answered {label}" if label is not None else f"{seat} gave no readable answer"
            for seat, label in labels.items()]
    return ", ".join(said[:-1]) + f" and {said[-1]}" if len(said) > 1 else (said[0] if said else "nobody answered")


def rationale_for(state: DebateState, label: str) -> str:
    """The latest decider's message that argues for ``label``."""
    for turn in reversed(state.turns):
        if turn.reading.label == label and turn.speaker in state.deciders:
            return turn.text
    return ""


def stated_or_one(state: DebateState, seat: str) -> float:
    """A seat's own stated confidence in its latest answer, or 1.0 when it stated none."""
    turn = state.latest(seat)
    return turn.reading.confidence if turn and turn.reading.confidence is not None else 1.0


def single_answer(state: DebateState, seat: str, who: str) -> DebateOutcome:
    """The outcome when one seat's final answer decides (an actor, a single classifier)."""
    turn = state.latest(seat)
    if turn is None or turn.reading.label is None:
        reason = turn.reading.error if turn else f"the {who} seat never answered"
        return DebateOutcome(None, f"the {who} seat's final answer could not be read: {reason}", turn.text if turn else "")
    return DebateOutcome(turn.reading.label, who, turn.text)
