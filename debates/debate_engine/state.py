"""The explicit state of one debate: every turn, parsed once, in the order the manager received it.

The manager owns this object; the protocol reads it to choose who speaks next and to decide the
outcome. Consensus is judged here over *every* decider's latest answer, because an AutoGen
termination condition only sees the last parallel speaker's messages.

The state is data and knows no protocol: what it needs of one (whose answers count, whether rounds
are concurrent, how a seat's message is read) the manager hands it as :class:`DebateRules` when
the debate starts (:func:`debates.debate_engine.protocol.debate_state`), so the protocol sits above the
state it reads.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Sequence

from debates.debate_engine.reading import StanceReading, read_message
from debates.debate_engine.config import DebateConfig
from debates.debate_engine.turn_state import TurnPolicyState
from debates.debate_engine.diagnostics import AnswerTaxonomy, DebateDiagnostics
from m3d_agents.labels import Taxonomy
from m3d_agents.verdict import TranscriptTurn

DESK_NAME = "retrieval_desk"
"""The participant that answers the debaters' queries from retrieval (see :mod:`debates.debate_engine.desk`)."""


@dataclass
class TurnRecord:
    speaker: str
    role: str
    round: int
    text: str
    reading: StanceReading

    @property
    def stance(self) -> str | None:
        """What the turn answered: a label, or a seat's action (a cascade agent's Finish)."""
        return self.reading.label or self.reading.action

    def transcript_turn(self) -> TranscriptTurn:
        return TranscriptTurn(
            speaker=self.speaker,
            role=self.role,
            round=self.round,
            text=self.text,
            stance=self.stance if self.speaker != DESK_NAME else None,
            parse_error=self.reading.error,
        )


@dataclass(frozen=True)
class DebateRules:
    """What the state needs of its protocol, handed over as data when the debate starts.

    The defaults (every seat decides, turns in order, every message read as an answer) serve a state
    built only to hold and show turns; a debate's manager always passes its protocol's.
    """

    deciders: tuple[str, ...] | None = None
    """The seats whose answers count towards consensus and the outcome; None: every seat."""
    concurrent_rounds: bool = False
    """A round's answers are given at once, so agreement counts only where a round is complete."""
    read: Callable[[str, str], StanceReading] | None = None
    """How the message of a seat (by name) is read; None: as an answer line in the debate's taxonomy."""


@dataclass
class DebateState:
    config: DebateConfig
    taxonomy: Taxonomy
    rules: DebateRules = field(default_factory=DebateRules)
    turns: list[TurnRecord] = field(default_factory=list)
    answered_queries: int = 0
    stop_reason: str = ""
    turn_state: TurnPolicyState = field(default_factory=TurnPolicyState)

    @property
    def deciders(self) -> list[str]:
        """Seats whose answers count towards consensus."""
        chosen = self.rules.deciders
        return list(chosen) if chosen is not None else [s.name for s in self.config.seats]

    def role_of(self, speaker: str) -> str:
        if speaker == DESK_NAME:
            return "retrieval"
        return self.config.seat(speaker).role

    def rounds_of(self, speaker: str) -> int:
        return sum(1 for t in self.turns if t.speaker == speaker)

    def record(self, speaker: str, text: str) -> TurnRecord:
        role = self.role_of(speaker)
        if speaker == DESK_NAME:
            reading = StanceReading(label=None, confidence=None, queries=[])
        elif self.rules.read is not None:
            reading = self.rules.read(speaker, text)
        else:
            reading = read_message(text, self.taxonomy, self.config.max_queries_per_turn)
        turn = TurnRecord(speaker, role, self.rounds_of(speaker) + 1, text, reading)
        self.turns.append(turn)
        return turn

    def reset(self) -> None:
        self.turns.clear()
        self.stop_reason = ""
        self.answered_queries = 0
        self.turn_state.reset()

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

    def seats_with_role(self, role: str) -> list[str]:
        return [s.name for s in self.config.seats if s.role == role]

    def latest_labels(self) -> dict[str, str | None]:
        labels: dict[str, str | None] = {}
        for name in self.deciders:
            turn = self.latest(name)
            labels[name] = turn.reading.label if turn else None
        return labels

    def consensus(self) -> str | None:
        """The shared label when every decider has answered and all latest answers agree."""
        labels = list(self.latest_labels().values())
        if labels and all(label is not None for label in labels) and len(set(labels)) == 1:
            return labels[0]
        return None

    def readable_votes(self) -> int:
        """How many deciders' latest answers could be read."""
        return sum(1 for label in self.latest_labels().values() if label is not None)

    def has_quorum(self) -> bool:
        """Whether more than ``majority_quorum`` of the deciders gave a readable answer."""
        deciders = len(self.deciders)
        return deciders > 0 and self.readable_votes() > self.config.majority_quorum * deciders

    def majority(self) -> str | None:
        """The most common latest label among deciders; None on a tie, when nobody answered, or without
        a quorum of readable answers (:meth:`has_quorum`)."""
        counts = Counter(label for label in self.latest_labels().values() if label is not None)
        if not counts or not self.has_quorum():
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
        return min((self.rounds_of(name) for name in self.deciders), default=0)

    def current_round(self) -> int:
        """The highest round any decider has spoken in: the round in progress, or the last one."""
        return max((self.rounds_of(name) for name in self.deciders), default=0)

    def consensus_turn(self) -> TurnRecord | None:
        """The turn from which every decider's latest answer has agreed up to now; None when they do not agree now.

        Walking the turns, not the rounds, finds a consensus that an async debate reaches in the
        middle of a round (a debater changes its answer before the others speak again). In
        concurrent rounds (``sync``) the answers of one round are recorded one after another, but
        nobody has read anybody else's answer of that round: agreement is checked only where a
        round is complete, so two answers that swap sides within a round are no consensus.
        """
        deciders = set(self.deciders)
        at_round_ends = self.rules.concurrent_rounds
        latest: dict[str, str | None] = {}
        spoken: Counter[str] = Counter()
        since: TurnRecord | None = None
        for turn in self.turns:
            if turn.speaker not in deciders:
                continue
            latest[turn.speaker] = turn.reading.label
            spoken[turn.speaker] += 1
            if at_round_ends and (len(spoken) < len(deciders) or len(set(spoken.values())) > 1):
                continue
            labels = set(latest.values())
            if len(latest) < len(deciders) or None in labels or len(labels) != 1:
                since = None
            elif since is None:
                since = turn
        return since

    def transcript(self) -> list[TranscriptTurn]:
        return [t.transcript_turn() for t in self.turns]

    def diagnostics(
        self, label: str | None, decided_by: str | None = None, image_descriptions: Sequence[str] = ()
    ) -> DebateDiagnostics:
        """How the debate went: why it stopped, what decided, the round of consensus, who changed their answer.

        ``label`` is the decided label in the answering taxonomy (None: no decision)."""
        deciders = self.deciders
        first = [t.reading.label for t in self.turns if t.speaker in deciders and t.round == 1]
        counts = Counter(x for x in first if x is not None)
        ranked = counts.most_common()
        first_majority = ranked[0][0] if ranked and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]) else None
        changes: dict[str, int] = {}
        for name in deciders:
            labels = [t.reading.label for t in self.turns if t.speaker == name and t.reading.label is not None]
            changes[name] = sum(1 for a, b in zip(labels, labels[1:]) if a != b)
        agreed = self.consensus_turn()
        return DebateDiagnostics(
            stop_reason=self.stop_reason,
            decided_by=decided_by if label is not None else None,
            rounds=self.current_round(),
            consensus_round=agreed.round if agreed is not None else None,
            answer_changes=changes,
            first_round_majority=first_majority,
            overturned_first_round_majority=bool(first_majority and label and label != first_majority),
            queries_answered=self.answered_queries,
            answer=AnswerTaxonomy(taxonomy=self.taxonomy.name, label=label),
            selection=self.turn_state.diagnostics(),
            planner_escalated=None if (escalated := self.turn_state.planner_escalated()) is None else bool(escalated),
            image_descriptions=list(image_descriptions),
        )
