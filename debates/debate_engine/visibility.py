"""Who sees what: each seat's view of the debate, built only from the messages it was sent.

A :class:`SeatView` records what the group chat delivered to one seat (and the seat's own
messages, which the chat does not send back). Which of those messages the seat may use for its
next turn is the protocol's rule (:meth:`debates.debate_engine.protocol.DebateProtocol.visible`), applied by
the seat that holds the view; the view knows no protocol and only offers the common selections
(the latest answer of a speaker, optionally before a round). The same views serve model seats and people,
and :class:`PeopleScreen` holds a front-end's stream of finished turns to the same rule while people sit
in seats (the protocol passed in, as it is to a seat).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, Protocol, Sequence, TypeVar

from autogen_agentchat.messages import BaseChatMessage

from debates.debate_engine.state import DESK_NAME
from debates.debate_engine.config import DebateConfig, SeatConfig


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

    def add_turn(self, speaker: str, text: str) -> Seen:
        """One finished turn of the debate, whoever spoke it (a screen that follows the whole debate); what was recorded."""
        if speaker == self.seat.name:
            self.add_own(text)
        else:
            self._append(speaker, text)
        return self.seen[-1]

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


class SpokenTurn(Protocol):
    speaker: str
    text: str


class SeatRule(Protocol):
    """What a screen needs of the debate protocol (:class:`debates.debate_engine.protocol.DebateProtocol` is one): which
    messages a seat may use, and how many turns each seat takes at most. Typed here by shape, since the protocol
    module sits above the views."""

    def visible(self, view: SeatView) -> list[Seen]: ...

    def most_turns(self, config: DebateConfig) -> dict[str, int]: ...


T = TypeVar("T", bound=SpokenTurn)


class PeopleScreen(Generic[T]):
    """What a person in a seat may be shown of the debate while it runs: the turns their seat could use.

    A front-end streams every finished turn, and a person reads that stream as well as their own
    screen. Shown as they finish, the turns would tell a person more than the model in that seat is
    told: agent_a's first answer before agent_b's own, independent one. So while people sit in seats,
    a finished turn is held back until every person's seat may use it under the protocol's rule
    (the same :class:`SeatView` a model seat keeps), until that person has no turn left, or until the
    debate ends (:meth:`rest`). A person's own turns are never held from them.
    """

    def __init__(self, people: Sequence[SeatConfig], config: DebateConfig, protocol: SeatRule) -> None:
        self._protocol = protocol
        self._views = [SeatView(seat, config, for_person=True) for seat in people]
        self._most = protocol.most_turns(config)
        self._shown: list[set[tuple[str, int]]] = [set() for _ in self._views]
        self._held: list[tuple[T, list[Seen]]] = []

    def finished(self, turn: T) -> list[T]:
        """The turns that may be shown now that ``turn`` has finished (it among them, or not yet), in the order they were given."""
        self._held.append((turn, [view.add_turn(turn.speaker, turn.text) for view in self._views]))
        for view, shown in zip(self._views, self._shown):
            shown.update((seen.speaker, seen.round) for seen in self._protocol.visible(view))
        ready = [(t, seen) for t, seen in self._held if all(self._may_see(i, s) for i, s in enumerate(seen))]
        self._held = [(t, seen) for t, seen in self._held if not any(t is r for r, _ in ready)]
        return [t for t, _ in ready]

    def rest(self) -> list[T]:
        """Whatever is still held, once the debate is over: nobody is left to answer."""
        held, self._held = self._held, []
        return [t for t, _ in held]

    def _may_see(self, person: int, seen: Seen) -> bool:
        view = self._views[person]
        done = view.own_round > self._most.get(view.seat.name, 1)
        return seen.speaker == view.seat.name or done or (seen.speaker, seen.round) in self._shown[person]
