"""Who sees what: each seat's view of the debate, built only from the messages it was sent.

The rules (identical for model and human seats):
- first round: nobody sees another participant's answer, so first opinions are independent;
- ``async`` and ``judged``: later, each other debater's latest answer;
- ``sync`` and ``disambiguation``: later, each other debater's answer from the previous round only;
- the judge: the whole debate transcript, but never the retrieved evidence;
- actor and skeptic: each sees the other's latest message;
- the cascade's modality agents and the standard single seat: nobody else's message; each judges
  its own modality, and the cascade's gating decides whether it is asked at all.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from autogen_agentchat.messages import BaseChatMessage

import prompts
from debates.config import DebateConfig, SeatConfig
from debates.chat.state import DESK_NAME


@dataclass
class Seen:
    speaker: str
    round: int
    text: str


@dataclass
class SeatView:
    seat: SeatConfig
    config: DebateConfig
    seen: list[Seen] = field(default_factory=list)

    def add(self, messages: Sequence[BaseChatMessage]) -> None:
        roster = {s.name for s in self.config.seats} | {DESK_NAME}
        for message in messages:
            if message.source in roster and message.source != self.seat.name:
                self._append(message.source, message.to_model_text())

    def add_own(self, text: str) -> None:
        """A seat's own message is not sent back to it by the group chat, so it records it here."""
        self._append(self.seat.name, text)

    def _append(self, speaker: str, text: str) -> None:
        count = sum(1 for s in self.seen if s.speaker == speaker)
        self.seen.append(Seen(speaker, count + 1, text))

    @property
    def own_round(self) -> int:
        return 1 + sum(1 for s in self.seen if s.speaker == self.seat.name)

    def _peer_label(self, name: str) -> str:
        role = self.config.seat(name).role if name != DESK_NAME else "retrieval"
        kind = "a human" if self.config.framing == "human" else "an AI model"
        if role in ("debater", "actor", "skeptic"):
            return f"{name} ({role}, {kind})"
        return name

    def _latest(self, speaker: str, before_round: int | None = None) -> Seen | None:
        candidates = [
            s for s in self.seen if s.speaker == speaker and (before_round is None or s.round < before_round)
        ]
        return candidates[-1] if candidates else None

    def visible(self) -> list[Seen]:
        """The messages this seat may use for its next turn, in a stable order."""
        role, protocol, me = self.seat.role, self.config.protocol, self.seat.name
        if role == "judge":
            return [s for s in self.seen if s.speaker != DESK_NAME and self.config.seat(s.speaker).role == "debater"]
        if role in ("actor", "skeptic"):
            other = next(s.name for s in self.config.seats if s.role == ("skeptic" if role == "actor" else "actor"))
            return [s for s in (self._latest(me), self._latest(other)) if s is not None]
        round_now = self.own_round
        if round_now == 1:
            return []
        previous_only = protocol in ("sync", "disambiguation")
        shown: list[Seen] = []
        own = self._latest(me)
        if own is not None:
            shown.append(own)
        for seat in self.config.seats:
            if seat.role == "debater" and seat.name != me:
                peer = self._latest(seat.name, before_round=round_now if previous_only else None)
                if peer is not None:
                    shown.append(peer)
        if protocol == "disambiguation":
            shown.extend(s for s in self.seen if s.speaker == DESK_NAME)
        return shown

    def history(self) -> str:
        blocks = []
        for item in self.visible():
            if item.speaker == self.seat.name:
                header = f"Your own answer in round {item.round}:"
            elif item.speaker == DESK_NAME:
                header = "Answers from the retrieval system to the questions asked:"
            else:
                header = f"{self._peer_label(item.speaker)}, round {item.round}:"
            blocks.append(f"{header}\n{item.text.strip()}")
        return "\n\n".join(blocks) if blocks else "(nothing yet)"

    def instruction(self) -> str:
        role = self.seat.role
        if role == "judge":
            return prompts.render("debate/judge_turn", history=self.history())
        if role == "skeptic":
            return prompts.render("debate/skeptic_turn", history=self.history())
        if role in ("text", "image", "cross_modal", "single"):
            return prompts.load("cascade/assess_turn")
        if self.own_round == 1:
            return prompts.load("debate/turn_first")
        if role == "actor":
            return prompts.render("debate/actor_later", round=self.own_round, history=self.history())
        return prompts.render("debate/turn_later", round=self.own_round, history=self.history())
