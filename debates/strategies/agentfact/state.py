"""The chat state of an AgentFact run: the board the policy reads, and the transcript of finished turns.

The group chat's manager records every message here before it asks the policy who speaks next,
so the policy always sees the board as the last speaker left it, parallel turns included.
Participants leave the stance and parse error of the turn they post in ``notes``; nothing is
parsed from the message text again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from debates.strategies.agentfact.board import Board
from debates.strategies.agentfact.policy import advance
from m3d_agents.verdict import TranscriptTurn


@dataclass
class WorkflowTurn:
    speaker: str
    round: int
    text: str
    stance: str | None = None
    parse_error: str | None = None

    def transcript_turn(self) -> TranscriptTurn:
        return TranscriptTurn(
            speaker=self.speaker, role=self.speaker, round=self.round, text=self.text, stance=self.stance,
            parse_error=self.parse_error,
        )


@dataclass
class AgentFactState:
    start: Callable[[], Board]
    board: Board = field(init=False)
    turns: list[WorkflowTurn] = field(default_factory=list)
    notes: dict[str, tuple[str | None, str | None]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.board = self.start()

    @property
    def stop_reason(self) -> str:
        return self.board.stop_reason

    @stop_reason.setter
    def stop_reason(self, value: str) -> None:
        self.board.stop_reason = value

    def record(self, speaker: str, text: str) -> WorkflowTurn:
        stance, error = self.notes.pop(speaker, (None, None))
        turn = WorkflowTurn(speaker, sum(1 for t in self.turns if t.speaker == speaker) + 1, text, stance, error)
        self.turns.append(turn)
        return turn

    def reset(self) -> None:
        self.board = self.start()
        self.turns.clear()
        self.notes.clear()

    def finished_turn(self, message: object) -> WorkflowTurn | None:
        """The turn a streamed message completed; None for events and for messages not recorded."""
        source = getattr(message, "source", None)
        text = getattr(message, "content", None)
        for turn in reversed(self.turns):
            if turn.speaker == source and turn.text == text:
                return turn
        return None

    def transcript(self) -> list[TranscriptTurn]:
        return [t.transcript_turn() for t in self.turns]


def speakers(state: AgentFactState) -> list[str] | None:
    return advance(state.board)
