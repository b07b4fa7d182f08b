"""Who sees what: each seat's view of the debate, built only from the messages it was sent.

A :class:`SeatView` records what the group chat delivered to one seat (and the seat's own
messages, which the chat does not send back). Which of those messages the seat may use for its
next turn is the protocol's rule (:meth:`debates.chat.protocol.DebateProtocol.visible`), applied by
the seat that holds the view; the view knows no protocol and only offers the common selections
(the latest answer of a speaker, optionally before a round). The same views serve model seats and people.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from autogen_agentchat.messages import BaseChatMessage

from debates.chat.state import DESK_NAME
from debates.chat.config import DebateConfig, SeatConfig


ARGUING_ROLES = ("debater", "actor", "skeptic")


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
    for_person: bool = False
    """A person's view: every other seat is named by its name (see :meth:`peer_label`)."""

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

    def role_of(self, speaker: str) -> str:
        return "retrieval" if speaker == DESK_NAME else self.config.seat(speaker).role

    def peers(self) -> list[str]:
        """The other seats that argue with this one (a judge argues with nobody)."""
        return [s.name for s in self.config.seats if s.name != self.seat.name and s.role in ARGUING_ROLES]

    def peer_label(self, name: str) -> str:
        """How another seat is named in this seat's prompt.

        A judge reads seat names, and so does a person in any seat. A model debater never does: under
        the ``human`` framing the other side speaks as the person the model is talking with ("Me", or
        "Person 2" among several), under ``ai`` as "the other AI model"; so the framing rests on who
        speaks, not on a label such as "agent_b" that would give the game away.
        """
        peers = self.peers()
        if self.for_person or self.seat.role not in ARGUING_ROLES or name not in peers:
            return name
        if self.config.framing == "human":
            return "Me" if len(peers) == 1 else f"Person {peers.index(name) + 1}"
        return "The other AI model" if len(peers) == 1 else f"AI model {peers.index(name) + 1}"

    def latest(self, speaker: str, before_round: int | None = None) -> Seen | None:
        candidates = [
            s for s in self.seen if s.speaker == speaker and (before_round is None or s.round < before_round)
        ]
        return candidates[-1] if candidates else None

    def desk_answers(self) -> list[Seen]:
        return [s for s in self.seen if s.speaker == DESK_NAME]

    def history(self, visible: Sequence[Seen]) -> str:
        """``visible`` (what the protocol lets this seat use, :meth:`DebateProtocol.visible`) as its prompt shows it."""
        blocks = []
        for item in visible:
            if item.speaker == self.seat.name:
                header = f"Your own answer, round {item.round}:"
            elif item.speaker == DESK_NAME:
                header = "Answers from the retrieval system to the questions asked:"
            else:
                header = f"{self.peer_label(item.speaker)}, round {item.round}:"
            blocks.append(f"{header}\n{item.text.strip()}")
        return "\n\n".join(blocks) if blocks else "(nothing yet)"
