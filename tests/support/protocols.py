"""Hand-built debate state for protocol unit tests: no model, no AutoGen team, just the rules.

The state and the seats' views know no protocol (the manager passes it in); a test's state and view
carry theirs, so that a test reads ``state.protocol.next_speakers(state)`` and ``view.instruction()``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from debates.debate_engine.config import DebateConfig
from debates.debate_engine.protocol import PROTOCOLS, DebateProtocol, debate_state
from debates.debate_engine.state import DebateState
from debates.debate_engine.visibility import SeatView, Seen
from debates.config_loader import load_config
from m3d_agents.labels import get_taxonomy


@dataclass
class ProtocolState(DebateState):
    """A debate's state with the protocol it runs under."""

    protocol: DebateProtocol = field(default=None, repr=False)  # type: ignore[assignment]


@dataclass
class ProtocolView(SeatView):
    """A seat's view with the protocol that decides what it sees and is told."""

    protocol: DebateProtocol = field(default=None, repr=False)  # type: ignore[assignment]

    def visible(self) -> list[Seen]:
        return self.protocol.visible(self)

    def instruction(self) -> str:
        return self.protocol.instruction(self)


def debate(config: str | DebateConfig, *turns: tuple[str, str], taxonomy: str = "binary", **overrides: object) -> ProtocolState:
    """A state in which each (speaker, text) was said, in this order."""
    loaded = load_config(config) if isinstance(config, str) else config
    assert isinstance(loaded, DebateConfig)
    if overrides:
        loaded = loaded.model_copy(update=overrides)
    protocol = PROTOCOLS.get(loaded.protocol)
    made = debate_state(protocol, loaded, get_taxonomy(taxonomy))
    state = ProtocolState(config=made.config, taxonomy=made.taxonomy, rules=made.rules, protocol=protocol)
    for speaker, text in turns:
        state.record(speaker, text)
    return state


def view_of(state: ProtocolState, seat: str) -> ProtocolView:
    """What ``seat`` was sent (everyone else's messages) plus its own, in the order they were said."""
    view = ProtocolView(state.config.seat(seat), state.config, protocol=state.protocol)
    for turn in state.turns:
        if turn.speaker == seat:
            view.add_own(turn.text)
        else:
            view._append(turn.speaker, turn.text)
    return view


def seen(view: ProtocolView) -> list[tuple[str, int]]:
    return [(s.speaker, s.round) for s in view.visible()]


def says(label: str, marker: str = "", confidence: float | None = None) -> str:
    tail = f"\nCONFIDENCE: {confidence}" if confidence is not None else ""
    return f"{marker} FINAL ANSWER: {label}{tail}".strip()
