"""Hand-built debate state for protocol unit tests: no model, no AutoGen team, just the rules."""

from __future__ import annotations

from debates.chat.state import DebateState
from debates.chat.visibility import SeatView
from debates.chat.config import DebateConfig
from debates.config_loader import load_config
from m3d_agents.labels import get_taxonomy


def debate(config: str | DebateConfig, *turns: tuple[str, str], taxonomy: str = "binary", **overrides: object) -> DebateState:
    """A state in which each (speaker, text) was said, in this order."""
    loaded = load_config(config) if isinstance(config, str) else config
    assert isinstance(loaded, DebateConfig)
    if overrides:
        loaded = loaded.model_copy(update=overrides)
    state = DebateState(config=loaded, taxonomy=get_taxonomy(taxonomy))
    for speaker, text in turns:
        state.record(speaker, text)
    return state


def view_of(state: DebateState, seat: str) -> SeatView:
    """What ``seat`` was sent (everyone else's messages) plus its own, in the order they were said."""
    view = SeatView(state.config.seat(seat), state.config, state.protocol)
    for turn in state.turns:
        if turn.speaker == seat:
            view.add_own(turn.text)
        else:
            view._append(turn.speaker, turn.text)
    return view


def seen(view: SeatView) -> list[tuple[str, int]]:
    return [(s.speaker, s.round) for s in view.visible()]


def says(label: str, marker: str = "", confidence: float | None = None) -> str:
    tail = f"\nCONFIDENCE: {confidence}" if confidence is not None else ""
    return f"{marker} FINAL ANSWER: {label}{tail}".strip()
