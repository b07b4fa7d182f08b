"""``cascade`` (AgentM3D): the text agent, then the image agent, then the cross-modal agent; the
first distortion ends the chat, and its modality names the M3D label (eq. 9).

The seats speak in the order the configuration lists them, text → image → cross-modal by default;
the T2Agent paper's Table 6 runs MMD-Agent in other orders (``mmd-agent-match-text-image``,
``mmd-agent-image-match-text``, chained). The chained form also takes AMG's five forgery types as its
checks (``AMG_CHECKS``), and then answers in the amg taxonomy.

Each modality agent answers with one ``Finish[...]`` action. Only the two actions of its own
modality count: a text agent that answers ``Finish[MATCH]`` has not done its job, so that answer is
unreadable (and retried), not silently reinterpreted. Agents see nobody else's message: each judges
its own modality, and the cascade's gating decides whether it is asked at all. The cascade always
answers in the m3d taxonomy; a verdict on a two-label data set is carried over through the
misinformation map.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable, ClassVar

import prompts
from m3d_agents.fence import render_prompt
from debates.debate_engine.reading import StanceReading, stated_confidence
from debates.debate_engine.protocol import protocol
from debates.debate_engine.protocol import DebateOutcome
from debates.strategies.debate.protocols.base import SoloProtocol
from m3d_agents.evidence import evidence_block
from m3d_agents.errors import ParseError
from m3d_agents.grammars import Grammar, action_lines
from m3d_agents.parsing import parse_finish, strip_reasoning
from m3d_agents.verdict import Finding

if TYPE_CHECKING:
    from debates.debate_engine.state import DebateState
    from debates.debate_engine.config import DebateConfig, SeatConfig
    from m3d_agents.backends.factory import Backend
    from m3d_agents.backends.metering import UsageLedger
    from m3d_agents.evidence import Evidence
    from m3d_agents.labels import Taxonomy
    from m3d_agents.media.images import PreparedSample


@dataclass(frozen=True)
class ModalityCheck:
    role: str
    title: str
    clear: str
    distorted: str
    distortion_label: str
    taxonomy: str = "m3d"
    """The label set the check's distortion label belongs to: a cascade answers in its checks' taxonomy."""
    modality: str = ""
    """The modality a finding of this check is filed under (the role itself for the M3D checks)."""

    @property
    def finding_modality(self) -> str:
        return self.modality or self.role


CHECKS: dict[str, ModalityCheck] = {
    "text": ModalityCheck("text", "text veracity", "TEXT SUPPORT", "TEXT REFUTE", "textual_veracity_distortion"),
    "image": ModalityCheck("image", "image veracity", "IMAGE SUPPORT", "IMAGE REFUTE", "visual_veracity_distortion"),
    "cross_modal": ModalityCheck(
        "cross_modal", "cross-modal consistency", "MATCH", "MISMATCH", "cross_modal_consistency_distortion"
    ),
}
"""MMFakeBench's three checks, in MMD-Agent's default order; the roles of the cascade's seats."""

AMG_CHECKS: dict[str, ModalityCheck] = {
    check.role: check for check in (
        ModalityCheck("image_fabrication", "image fabrication", "IMAGE AUTHENTIC", "IMAGE FABRICATED", "image_fabrication",
                      "amg", "image"),
        ModalityCheck("non_evidential_image", "non-evidential image", "EVIDENCE", "NO EVIDENCE", "non_evidential_image",
                      "amg", "cross_modal"),
        ModalityCheck("entity_inconsistency", "entity consistency", "ENTITY MATCH", "ENTITY MISMATCH",
                      "entity_inconsistency", "amg", "cross_modal"),
        ModalityCheck("event_inconsistency", "event consistency", "EVENT MATCH", "EVENT MISMATCH", "event_inconsistency",
                      "amg", "cross_modal"),
        ModalityCheck("time_inconsistency", "time consistency", "TIME MATCH", "TIME MISMATCH", "time_inconsistency",
                      "amg", "cross_modal"),
    )
}
"""AMG's five forgery types as checks of a chain (``mmd-agent-amg``), with the answers of ``t2agent-amg``'s subtasks:
only the chained cascade takes them, since only it has their prompts (prompts/cascade/chain_*_step.md)."""

ALL_CHECKS: dict[str, ModalityCheck] = {**CHECKS, **AMG_CHECKS}

ALL_ACTIONS: tuple[str, ...] = tuple(dict.fromkeys(a for c in ALL_CHECKS.values() for a in (c.distorted, c.clear)))
"""Every check's two actions: an answer naming another check's action is read, then refused as not its own."""

NO_DISTORTION: dict[str, str] = {"m3d": "original", "amg": "real"}
"""What a cascade answers when no check found a distortion, per taxonomy."""
NO_DISTORTION_LABEL = NO_DISTORTION["m3d"]


def parse_modality_action(text: str, role: str) -> str:
    """The Finish action of a modality agent, which must be one of its own two actions."""
    check = ALL_CHECKS[role]
    action = parse_finish(text, ALL_ACTIONS)
    if action not in (check.clear, check.distorted):
        raise ParseError(
            f"Finish[{check.distorted}|{check.clear}]",
            f"the {check.title} agent must answer Finish[{check.distorted}] or Finish[{check.clear}], not Finish[{action}]",
            text,
        )
    return action


def distortion_label(role: str, action: str) -> str | None:
    """The label an action establishes, or None when this check found no distortion."""
    check = ALL_CHECKS[role]
    return check.distortion_label if action == check.distorted else None


def cascade_label(actions: dict[str, str | None]) -> str | None:
    """AgentM3D eq. 9 over the actions given so far (role -> action in the order the checks ran, None when
    unreadable or absent).

    The first check whose action reports a distortion decides the label; a check with an unreadable
    answer makes the outcome unknown (None), because a distortion it would have found cannot be
    ruled out. Every check clear: the taxonomy's undistorted label (``original``, ``real``).
    """
    for role, action in actions.items():
        if action is None:
            return None
        label = distortion_label(role, action)
        if label is not None:
            return label
    taxonomy = next((ALL_CHECKS[role].taxonomy for role in actions), "m3d")
    return NO_DISTORTION[taxonomy]


def checks_taxonomy(config: DebateConfig) -> str:
    """The taxonomy of a cascade's checks (every seat's role comes from one set)."""
    return next((ALL_CHECKS[s.role].taxonomy for s in config.seats if s.role in ALL_CHECKS), "m3d")


MODALITY_ROLES: tuple[str, ...] = tuple(CHECKS)
"""The cascade's roles, in their default order."""


@protocol("cascade")
class Cascade(SoloProtocol):
    """Text, then image, then cross-modal agents; the first distortion ends the chat."""

    roles: ClassVar[frozenset[str]] = frozenset(MODALITY_ROLES)
    """The decoupled cascade has prompts for MMFakeBench's three checks only."""

    def validate(self, config: DebateConfig) -> None:
        super().validate(config)
        roles = [s.role for s in config.seats]
        if len(set(roles)) != len(roles):
            raise ValueError(f"each cascade role ({', '.join(MODALITY_ROLES)}) may have one seat at most; got {roles}")
        answering = checks_taxonomy(config)
        mixed = sorted({r for r in roles if ALL_CHECKS[r].taxonomy != answering})
        if mixed:
            raise ValueError(f"a cascade's checks come from one label set; {mixed} are not {answering} checks")
        if config.taxonomy not in (None, answering):
            raise ValueError(f"a cascade of these checks answers in the {answering} taxonomy")

    def answer_taxonomy(self, config: DebateConfig, sample_taxonomy: str) -> str:
        return checks_taxonomy(config)

    def next_speakers(self, state: DebateState) -> list[str] | None:
        """A modality agent speaks only when every agent before it found no distortion.

        An unreadable answer also ends the chat: whether that modality is distorted is unknown, so
        asking the next agent could only produce a label the evidence does not support.
        """
        for seat in state.config.seats:
            turn = state.latest(seat.name)
            if turn is None:
                return [seat.name]
            title = ALL_CHECKS[seat.role].title
            if turn.reading.action is None:
                state.stop_reason = f"the {title} answer could not be read"
                return None
            if distortion_label(seat.role, turn.reading.action) is not None:
                state.stop_reason = f"the {title} check found a distortion ({turn.reading.action})"
                return None
        state.stop_reason = "no modality found a distortion"
        return None

    def system_prompt(self, seat: SeatConfig, config: DebateConfig, taxonomy: Taxonomy) -> str:
        return render_prompt(f"cascade/{seat.role}_system")

    async def prepare(
        self, config: DebateConfig, seat: SeatConfig, prepared: PreparedSample,
        backend_for: Callable[[SeatConfig], Backend], ledger: UsageLedger,
    ) -> PreparedSample:
        """T_image, once per sample and only when an agent that reads it is asked: the grounded
        description that the image and cross-modal agents share, made on the first of their
        backends (see :mod:`m3d_agents.tools.image_in_words`). A cascade that its text agent
        ends never makes it (eq. 9 gates the image agent off)."""
        lookers = [s for s in config.seats if s.role in ("image", "cross_modal")]
        if seat.role not in ("image", "cross_modal") or not prepared.images or prepared.descriptions:
            return prepared
        from m3d_agents.tools.image_in_words import image_descriptions

        descriptions = await image_descriptions(prepared, backend_for(lookers[0]), ledger)
        return replace(prepared, descriptions=descriptions)

    def calls_before_turns(self, config: DebateConfig) -> int:
        """T_image: one description call when an image or cross-modal seat takes part."""
        return int(any(s.role in ("image", "cross_modal") for s in config.seats))

    def post_block(self, seat: SeatConfig, prepared: PreparedSample, evidence: list[Evidence], vision: bool) -> str:
        """Each agent sees only its inputs (eqs. 5-7): the text agent the caption and the retrieved
        (Wikipedia) evidence, never the image; the image agent the image and its description, never
        the caption; the cross-modal agent the caption, the image and the description, never the
        text evidence. Forensic reports go to no agent: they are the image critic's own signal."""
        from m3d_agents.media.post_content import described_images

        text = prepared.sample.text
        if seat.role == "text":
            return prompts.render("cascade/text_task", text=text, evidence=evidence_block(evidence)).strip()
        images = described_images(prepared, vision)
        if seat.role == "image":
            return prompts.render("cascade/image_task", image_context=images).strip()
        return prompts.render("cascade/cross_modal_task", text=text, image_context=images).strip()

    def sees_images(self, seat: SeatConfig) -> bool:
        return seat.role != "text"

    def structured_turn(self, seat: SeatConfig, config: DebateConfig) -> bool | None:
        return None

    def turn_grammar(self, seat: SeatConfig, config: DebateConfig, taxonomy: Taxonomy) -> Grammar | None:
        """Prose, then the agent's own two ``Finish[...]`` actions and its confidence (prompts/cascade/*_system.md)."""
        check = ALL_CHECKS[seat.role]
        return action_lines([check.distorted, check.clear])

    def read_turn(self, text: str, role: str, taxonomy: Taxonomy, max_queries: int | None) -> StanceReading:
        visible = strip_reasoning(text)
        try:
            action: str | None = parse_modality_action(visible, role)
            error = None
        except ParseError as exc:
            action, error = None, str(exc)
        return StanceReading(label=None, confidence=stated_confidence(visible), queries=[], error=error, action=action)

    def decide(self, state: DebateState) -> DebateOutcome:
        """The M3D label of a finished cascade (eq. 9): the first distortion found, else ``original``."""
        actions: dict[str, str | None] = {}
        for seat in state.config.seats:
            turn = state.latest(seat.name)
            if turn is None:
                continue
            actions[seat.role] = turn.reading.action
            if turn.reading.action is None:
                return DebateOutcome(None, f"the {ALL_CHECKS[seat.role].title} answer could not be read: {turn.reading.error}", turn.text)
            if distortion_label(seat.role, turn.reading.action) is not None:
                break
        if not actions:
            return DebateOutcome(None, "no modality agent answered", "")
        label = cascade_label(actions)
        spoken = [t for t in state.turns if t.role in ALL_CHECKS]
        clear = NO_DISTORTION[checks_taxonomy(state.config)]
        rationale = spoken[-1].text if label != clear else "\n\n".join(t.text for t in spoken)
        return DebateOutcome(label, "cascade", rationale)

    def confidence(self, state: DebateState, decision: DebateOutcome) -> float:
        """The lowest stated confidence among the answers that decided the label."""
        spoken = [t for t in state.turns if t.role in ALL_CHECKS]
        deciding = spoken if decision.label == NO_DISTORTION[checks_taxonomy(state.config)] else spoken[-1:]
        stated = [t.reading.confidence for t in deciding if t.reading.confidence is not None]
        return min(stated) if stated else 1.0

    def findings(self, state: DebateState) -> list[Finding]:
        return [
            Finding(
                modality=ALL_CHECKS[t.role].finding_modality,
                subtask=None if t.role in CHECKS else t.role,
                label=t.reading.action,
                distortion=None if t.reading.action is None else distortion_label(t.role, t.reading.action) is not None,
                summary=t.text[:400],
            )
            for t in state.turns
            if t.role in ALL_CHECKS
        ]
