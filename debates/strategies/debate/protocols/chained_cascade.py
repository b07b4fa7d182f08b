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

The decoupled cascade without a planner (AgentM3D's agents, single passes) is ``mmd-agent-decoupled``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable

import prompts
from debates.chat.protocol import protocol
from debates.strategies.debate.protocols.cascade import CHECKS, MODALITY_ROLES, Cascade
from m3d_agents.evidence import evidence_block

if TYPE_CHECKING:
    from debates.chat.config import DebateConfig, SeatConfig
    from debates.chat.visibility import SeatView, Seen
    from m3d_agents.backends.factory import Backend
    from m3d_agents.backends.metering import UsageLedger
    from m3d_agents.evidence import Evidence
    from m3d_agents.labels import Taxonomy
    from m3d_agents.media.images import PreparedSample


@protocol("chained_cascade")
class ChainedCascade(Cascade):
    """MMD-Agent's prompt chain: text, image, then cross-modal check, each prompt carrying the earlier answers."""

    def validate(self, config: DebateConfig) -> None:
        super().validate(config)
        order = [MODALITY_ROLES.index(s.role) for s in config.seats]
        if order != sorted(order):
            raise ValueError(f"a chained cascade runs its steps in the order {', '.join(MODALITY_ROLES)}; "
                             f"got {[s.role for s in config.seats]}")

    async def prepare(
        self, config: DebateConfig, seat: SeatConfig, prepared: PreparedSample,
        backend_for: Callable[[SeatConfig], Backend], ledger: UsageLedger,
    ) -> PreparedSample:
        """Nothing: the chain's model looks at the image itself (AgentM3D's T_image is its own addition)."""
        return prepared

    def system_prompt(self, seat: SeatConfig, config: DebateConfig, taxonomy: Taxonomy) -> str:
        return prompts.load("cascade/chain_system")

    def post_block(self, seat: SeatConfig, prepared: PreparedSample, evidence: list[Evidence], vision: bool) -> str:
        """The same post for every step: one model reads one post, so the steps share this prefix."""
        from m3d_agents.media.post_content import described_images

        return prompts.render("cascade/chain_task", text=prepared.sample.text, image_context=described_images(prepared, vision),
                              evidence=evidence_block(evidence)).strip()

    def sees_images(self, seat: SeatConfig) -> bool:
        return True

    def visible(self, view: SeatView) -> list[Seen]:
        """The earlier steps' answers, in the order they were given."""
        return [s for s in view.seen if s.speaker != view.seat.name and view.role_of(s.speaker) in CHECKS]

    def instruction(self, view: SeatView) -> str:
        earlier = [f"Step {position} ({CHECKS[view.role_of(seen.speaker)].title}):\n{seen.text.strip()}"
                   for position, seen in enumerate(self.visible(view), start=1)]
        return prompts.render(f"cascade/chain_{view.seat.role}_step", earlier="\n\n".join(earlier) or "(none)")
