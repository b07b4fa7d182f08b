"""``chained_cascade`` (MMD-Agent): the cascade's three checks as one model's prompt chain.

AgentM3D (paper line 72) describes MMD-Agent as fixed prompt chaining within a single
vision-language model, where the reasoning of earlier stages is carried into later prompts, and
sets its own design against it: independent agents, each with its own inputs. This protocol is
the chained side of that comparison, so the paper's MMD-Agent rows (``mmd-agent``,
``mmd-agent-bon``) measure what the paper measured:

- every stage reads the whole post (the caption, the image, the text evidence), as one model
  reading one post would; there is no separate image description, since the model looks itself;
- each stage's prompt carries the earlier stages' answers, reasoning included;
- the gating and the label are the cascade's (eq. 9): the first distortion found ends the chain.

The stages run in the order the configuration lists its seats: text, image, cross-modal by default,
and the T2Agent paper's Table 6 reorders them (paper line 274: the rows differ in order only). A
seat's turn may be a ReAct trajectory (``turn_policy: {kind: react}``), as MMD-Agent's text stage
looks claims up on Wikipedia before it answers. The checks may also be AMG's five forgery types
(``mmd-agent-amg``), for the T2Agent paper's Table 2.

The decoupled cascade without a planner (AgentM3D's agents, single passes) is ``mmd-agent-decoupled``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, ClassVar

import prompts
from m3d_agents.fence import render_prompt
from debates.debate_engine.protocol import protocol
from debates.strategies.debate.protocols.cascade import ALL_CHECKS, Cascade
from m3d_agents.evidence import evidence_block

if TYPE_CHECKING:
    from debates.debate_engine.config import DebateConfig, SeatConfig
    from debates.debate_engine.visibility import SeatView, Seen
    from m3d_agents.backends.factory import Backend
    from m3d_agents.backends.metering import UsageLedger
    from m3d_agents.evidence import Evidence
    from m3d_agents.labels import Taxonomy
    from m3d_agents.media.images import PreparedSample


STEP_QUESTIONS: dict[str, str] = {
    "text": "the caption: are its factual claims true?",
    "image": "the picture: is it genuine, neither edited nor generated?",
    "cross_modal": "the pair: do the picture and the caption show the same event, place, time and people?",
    "image_fabrication": "the picture: is it an authentic photograph, neither edited nor generated?",
    "non_evidential_image": "the pair: is the picture evidence for what the caption reports, not merely on its topic?",
    "entity_inconsistency": "the people and things: are those the caption names the ones the picture shows?",
    "event_inconsistency": "the event: does the picture show the event the caption describes?",
    "time_inconsistency": "the time: could the picture have been taken when the caption says?",
}
"""What each step asks, as the system prompt lists the chain (in the configuration's order)."""


@protocol("chained_cascade")
class ChainedCascade(Cascade):
    """MMD-Agent's prompt chain: its checks in the configured order, each prompt carrying the earlier answers."""

    roles: ClassVar[frozenset[str]] = frozenset(ALL_CHECKS)

    async def prepare(
        self, config: DebateConfig, seat: SeatConfig, prepared: PreparedSample,
        backend_for: Callable[[SeatConfig], Backend], ledger: UsageLedger,
    ) -> PreparedSample:
        """Nothing: the chain's model looks at the image itself (AgentM3D's T_image is its own addition)."""
        return prepared

    def calls_before_turns(self, config: DebateConfig) -> int:
        return 0

    def system_prompt(self, seat: SeatConfig, config: DebateConfig, taxonomy: Taxonomy) -> str:
        """One system prompt for every step: the chain as the configuration orders it."""
        steps = "\n".join(f"{n}. {STEP_QUESTIONS[s.role]}" for n, s in enumerate(config.seats, start=1))
        return render_prompt("cascade/chain_system", count=len(config.seats), steps=steps)

    def post_block(self, seat: SeatConfig, prepared: PreparedSample, evidence: list[Evidence], vision: bool) -> str:
        """The same post for every step: one model reads one post, so the steps share this prefix."""
        from m3d_agents.media.post_content import described_images

        return prompts.render("cascade/chain_task", text=prepared.sample.text, image_context=described_images(prepared, vision),
                              evidence=evidence_block(evidence)).strip()

    def sees_images(self, seat: SeatConfig) -> bool:
        return True

    def visible(self, view: SeatView) -> list[Seen]:
        """The earlier steps' answers, in the order they were given."""
        return [s for s in view.seen if s.speaker != view.seat.name and view.role_of(s.speaker) in ALL_CHECKS]

    def instruction(self, view: SeatView) -> str:
        earlier = [f"Step {position} ({ALL_CHECKS[view.role_of(seen.speaker)].title}):\n{seen.text.strip()}"
                   for position, seen in enumerate(self.visible(view), start=1)]
        position = [s.name for s in view.config.seats].index(view.seat.name) + 1
        return prompts.render(f"cascade/chain_{view.seat.role}_step", position=position, count=len(view.config.seats),
                              earlier="\n\n".join(earlier) or "(none)")
