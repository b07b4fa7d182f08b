"""The explicit state of one debate: every turn, parsed once, in the order the manager received it.

The manager owns this object; speaker policies read it to choose who speaks next, and the
outcome is computed from it. Consensus is judged here over *every* decider's latest answer,
because an AutoGen termination condition only sees the last parallel speaker's messages.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from dataclasses import field as Field

from debates.config import MODALITY_ROLES, DebateConfig
from debates.protocols.cascade import parse_modality_action
from debates.turns.scoring import SelectorState
from m3d_agents.errors import ParseError
from m3d_agents.labels import Taxonomy
from m3d_agents.parsing import parse_label, parse_unit_score, strip_reasoning

_CONFIDENCE_LINE = re.compile(r"^\s*[*_]*confidence[*_]*\s*[:=].*$", re.IGNORECASE | re.MULTILINE)
_QUERY_LINE = re.compile(r"^\s*[*_-]*\s*QUERY\s*[:\-]\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)
NO_OBJECTIONS = "NO OBJECTIONS"


@dataclass
class StanceReading:
    """What one message says: its label (or why none could be read), confidence and queries."""

    label: str | None
    confidence: float | None
    queries: list[str]
    error: str | None = None
    rendered: str | None = Field(default=None, repr=False)
    action: str | None = None


def _stated_confidence(visible: str) -> float | None:
    lines = _CONFIDENCE_LINE.findall(visible)
    if not lines:
        return None
    try:
        return parse_unit_score(lines[-1])
    except ParseError:
        return None


def read_turn(text: str, role: str, taxonomy: Taxonomy, max_queries: int = 2) -> StanceReading:
    """The single reading of any seat's message: modality seats give a Finish action, others a label."""
    if role not in MODALITY_ROLES:
        return read_message(text, taxonomy, max_queries)
    visible = strip_reasoning(text)
    try:
        action: str | None = parse_modality_action(visible, role)
        error = None
    except ParseError as exc:
        action, error = None, str(exc)
    return StanceReading(label=None, confidence=_stated_confidence(visible), queries=[], error=error, action=action)


def read_message(text: str, taxonomy: Taxonomy, max_queries: int = 2) -> StanceReading:
    """The single reading of a debate message, used for agents and humans alike."""
    visible = strip_reasoning(text)
    queries = [q for q in _QUERY_LINE.findall(visible)][:max_queries]
    confidence = _stated_confidence(visible)
    try:
        label: str | None = parse_label(_CONFIDENCE_LINE.sub("", visible), taxonomy)
        error = None
    except ParseError as exc:
        label, error = None, str(exc)
    return StanceReading(label=label, confidence=confidence, queries=queries, error=error)


@dataclass
class TurnRecord:
    speaker: str
    role: str
    round: int
    text: str
    reading: StanceReading

    @property
    def stance(self) -> str | None:
        """What the turn answered: a label, or a modality agent's Finish action."""
        return self.reading.label or self.reading.action


@dataclass
class DebateState:
    config: DebateConfig
    taxonomy: Taxonomy
    turns: list[TurnRecord] = field(default_factory=list)
    answered_queries: int = 0
    stop_reason: str = ""
    selector: SelectorState = field(default_factory=SelectorState)

    def role_of(self, speaker: str) -> str:
        if speaker == DESK_NAME:
            return "retrieval"
        return self.config.seat(speaker).role

    def rounds_of(self, speaker: str) -> int:
        return sum(1 for t in self.turns if t.speaker == speaker)

    def record(self, speaker: str, text: str) -> TurnRecord:
        reading = (
            StanceReading(label=None, confidence=None, queries=[])
            if speaker == DESK_NAME
            else read_turn(text, self.role_of(speaker), self.taxonomy, self.config.max_queries_per_turn)
        )
        turn = TurnRecord(speaker, self.role_of(speaker), self.rounds_of(speaker) + 1, text, reading)
        self.turns.append(turn)
        return turn

    def finished_turn(self, message: object) -> TurnRecord | None:
        """The turn that a streamed message completed; None for events, and for messages not yet recorded.

        Matching on the text, not only on the last speaker, keeps concurrent (``sync``) turns apart.
        """
        source = getattr(message, "source", None)
        if not isinstance(getattr(message, "content", None), str) or not hasattr(message, "to_model_text"):
            return None
        text = message.to_model_text()
        for turn in reversed(self.turns):
            if turn.speaker == source and turn.text == text:
                return turn
        return None

    def latest(self, speaker: str) -> TurnRecord | None:
        for turn in reversed(self.turns):
            if turn.speaker == speaker:
                return turn
        return None

    def latest_labels(self) -> dict[str, str | None]:
        labels: dict[str, str | None] = {}
        for name in self.config.deciders:
            turn = self.latest(name)
            labels[name] = turn.reading.label if turn else None
        return labels

    def consensus(self) -> str | None:
        """The shared label when every decider has answered and all latest answers agree."""
        labels = list(self.latest_labels().values())
        if labels and all(label is not None for label in labels) and len(set(labels)) == 1:
            return labels[0]
        return None

    def majority(self) -> str | None:
        """The most common latest label among deciders; None on a tie or when nobody answered."""
        counts = Counter(label for label in self.latest_labels().values() if label is not None)
        if not counts:
            return None
        ranked = counts.most_common()
        if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
            return None
        return ranked[0][0]

    def pending_queries(self) -> list[tuple[str, str]]:
        """Queries asked by debaters since the retrieval desk last answered."""
        pending: list[tuple[str, str]] = []
        for turn in self.turns:
            if turn.speaker == DESK_NAME:
                pending = []
            else:
                pending.extend((turn.speaker, q) for q in turn.reading.queries)
        return pending

    def completed_rounds(self) -> int:
        deciders = self.config.deciders
        return min((self.rounds_of(name) for name in deciders), default=0)


DESK_NAME = "retrieval_desk"
