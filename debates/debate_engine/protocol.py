"""The debate protocol contract: everything that varies between debate settings, in one place.

A group-chat debate is the same machinery in every setting (the team, the seats, the visibility
bookkeeping, the runner); what differs is *the protocol*: which seats it accepts, who speaks next,
what each seat sees, which prompts it gets, how a message is read and how the outcome is decided.
Each setting is one module in :mod:`debates.strategies.debate.protocols` that implements this contract and
registers itself with ``@protocol("name")``, so "where is the judged debate?" has one answer:
``debates/strategies/debate/protocols/judged.py``.

Implementations are plain objects whose methods are pure functions of the state they are given,
so every rule can be unit-tested on a hand-built :class:`~debates.debate_engine.state.DebateState` without
any model. The state, the seats' views and the configuration know no protocol: the manager passes
the protocol to whatever needs it, and hands the state what it needs of the protocol as data
(:func:`debate_state`), so this module sits above the data it reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Protocol, TypeVar, cast

from debates.debate_engine.config import PROTOCOLS as PROTOCOL_RULES
from debates.debate_engine.config import DebateConfig, ProtocolRules, SeatConfig
from debates.debate_engine.reading import StanceReading
from debates.debate_engine.state import DebateRules, DebateState
from m3d_agents.registry import Registry

if TYPE_CHECKING:
    from autogen_agentchat.base import ChatAgent

    from debates.debate_engine.visibility import SeatView, Seen
    from m3d_agents.backends.factory import Backend
    from m3d_agents.backends.metering import UsageLedger
    from m3d_agents.evidence import Evidence
    from m3d_agents.grammars import Grammar
    from m3d_agents.labels import Taxonomy
    from m3d_agents.media.images import PreparedSample
    from m3d_agents.sample import Sample
    from m3d_agents.verdict import Finding
    from retrieval.interfaces import QueryAnswerer


@dataclass(frozen=True)
class DebateOutcome:
    """How a finished debate came out: the label (None: no decision), who or what decided it, and
    the text that argues for it. When ``label`` is None, ``decided_by`` says why there is none."""

    label: str | None
    decided_by: str
    rationale: str


class DebateProtocol(ProtocolRules, Protocol):
    """A debate setting. See :class:`debates.strategies.debate.protocols.base.DebateDefaults` for the shared defaults."""

    name: str
    previous_round_only: ClassVar[bool]
    """Whether rounds are concurrent: a seat sees the others' answers of the previous round only,
    and agreement counts only where a round is complete."""

    def deciders(self, config: DebateConfig) -> list[str]:
        """The seats whose answers count towards consensus and the outcome."""

    def next_speakers(self, state: DebateState) -> list[str] | None:
        """Who speaks next (several at once run concurrently), or None with ``state.stop_reason`` set."""

    def visible(self, view: SeatView) -> list[Seen]:
        """The messages a seat may use for its next turn."""

    def instruction(self, view: SeatView) -> str:
        """The last part of a seat's prompt: what to do this turn, with what it may see."""

    def system_prompt(self, seat: SeatConfig, config: DebateConfig, taxonomy: Taxonomy) -> str: ...

    def post_block(self, seat: SeatConfig, prepared: PreparedSample, evidence: list[Evidence], vision: bool) -> str:
        """The stable prefix of every prompt of a seat: the post and what the seat may know about it."""

    def structured_turn(self, seat: SeatConfig, config: DebateConfig) -> bool | None:
        """None: the seat answers in free text. Otherwise it may answer in schema-constrained JSON,
        and the value says whether the schema has a ``queries`` field."""

    def read_turn(self, text: str, role: str, taxonomy: Taxonomy, max_queries: int | None) -> StanceReading:
        """The single reading of a seat's message."""

    def turn_grammar(self, seat: SeatConfig, config: DebateConfig, taxonomy: Taxonomy) -> Grammar | None:
        """A seat's turn format as a grammar (:mod:`m3d_agents.grammars`), which a server that decodes under
        one is given so that the turn is always readable; None: free text."""

    def extra_participants(
        self, state: DebateState, sample: Sample, ledger: UsageLedger, answerer: QueryAnswerer | None
    ) -> list[ChatAgent]:
        """Participants that are not seats of the configuration, such as a retrieval desk."""

    async def prepare(
        self, config: DebateConfig, seat: SeatConfig, prepared: PreparedSample,
        backend_for: Callable[[SeatConfig], Backend], ledger: UsageLedger,
    ) -> PreparedSample:
        """Work ``seat`` needs on the post before its first turn (the cascade's image description),
        done when the seat is first asked, so a debate that stops before it never pays for it;
        returns the prepared sample the seat is given, which later seats receive in turn (see
        :class:`debates.debate_engine.preparation.SamplePreparation`)."""

    def decide(self, state: DebateState) -> DebateOutcome: ...

    def confidence(self, state: DebateState, decision: DebateOutcome) -> float: ...

    def findings(self, state: DebateState) -> list[Finding]: ...


PROTOCOLS = cast(Registry[DebateProtocol], PROTOCOL_RULES)
"""Every debate protocol by name; the built-in ones register when :mod:`debates.strategies.debate.protocols` is
imported (on the first lookup). The registry is the one :mod:`debates.debate_engine.config` validates configurations with,
typed here with the whole contract (a protocol is registered only through :func:`protocol`, which takes a whole
one)."""

P = TypeVar("P", bound=type[Any])


def protocol(name: str) -> Callable[[P], P]:
    """Register a protocol class under ``name`` (one instance serves every debate: protocols hold no state)."""
    return PROTOCOLS.register_instance(name)


def debate_state(protocol: DebateProtocol, config: DebateConfig, taxonomy: Taxonomy) -> DebateState:
    """A fresh state for a debate under ``protocol``, given what it needs of the protocol as data: the deciders,
    whether rounds are concurrent, and the protocol's reading of each message (a seat that argues without
    answering, as a judged debate's debater, has given no unreadable answer)."""

    def read(speaker: str, text: str) -> StanceReading:
        seat = config.seat(speaker)
        reading = protocol.read_turn(text, seat.role, taxonomy, config.max_queries_per_turn)
        if reading.label is None and not protocol.answers_required(seat, config):
            reading.error = None
        return reading

    rules = DebateRules(deciders=tuple(protocol.deciders(config)), concurrent_rounds=protocol.previous_round_only, read=read)
    return DebateState(config=config, taxonomy=taxonomy, rules=rules)

