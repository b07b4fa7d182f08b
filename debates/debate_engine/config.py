"""Debate configurations: a small declarative object (YAML validated by pydantic).

A setting of the papers is a combination of a *protocol* (who speaks when, who sees what), a
*framing* (told it debates a human or an AI) and per-seat choices (role, backend, model,
temperature, stance, turn policy). New settings are new YAML files, not new classes. Which seats
a protocol accepts is the protocol's own rule (:meth:`ProtocolRules.validate`); this model checks
what holds for every protocol.

A configuration sees its protocol only through :class:`ProtocolRules`, what a protocol says about a
configuration before any debate runs (which seats it accepts, how many turns each may take, who
must answer). The whole contract, what a protocol does during a debate, extends it in
:mod:`debates.debate_engine.protocol`, which sits above this module, the state and the views it reads.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, Protocol, Union

from pydantic import BeforeValidator, Field, TypeAdapter, model_validator

from debates.strategy import CallBudget, PersonSeat, StrategyConfig, configuration, rounds_phrase, strategy_field
from m3d_agents.config_types import MAX_SEATS, Settings, Temperature
from m3d_agents.errors import InputError
from m3d_agents.labels import get_taxonomy
from m3d_agents.registry import Registry


class RewardConfig(Settings):
    """Where the reward u of a best-of-N candidate comes from.

    ``llm_judge`` asks the seat's own backend for a score in [0, 1]. ``sequence_classifier`` runs a
    transformers reward model (such as GRM-Gemma2-2B) from a local directory, or from a model id that
    is already in the local Hugging Face cache: nothing is downloaded at run time.
    """

    kind: str = Field("llm_judge", description="a registered reward: llm_judge or sequence_classifier")
    model: str | None = Field(None, description="sequence_classifier: a local directory or a cached model id")
    device: str = Field("cpu", description="sequence_classifier: the torch device it runs on (cpu, cuda, cuda:1 ...)")
    max_length: int = Field(2048, gt=0, le=131_072, description="sequence_classifier: tokens of prompt and candidate it reads, cut from the left")

    @model_validator(mode="after")
    def _needs_model(self) -> "RewardConfig":
        if self.kind == "sequence_classifier" and not self.model:
            raise ValueError("reward.kind sequence_classifier needs reward.model (a local directory or model id)")
        return self


class TurnPolicySettings(Settings):
    """What every turn policy has: its kind, which decides the rest (declared first, so it is listed first)."""

    kind: str = Field(description="single, best_of_n, planned or react")


class SinglePolicy(TurnPolicySettings):
    """``single``: one call per turn; an unreadable answer is asked again, then reported."""

    kind: Literal["single"] = Field("single", description="single: one call per turn")


class BestOfNSettings(TurnPolicySettings):
    """What ``best_of_n`` samples and how it scores: N candidates, s = u + q, the top-m gap rule."""

    n: int = Field(5, ge=1, le=64, description="N, the candidates sampled per turn")
    tau: float = Field(0.5, ge=0.0, description="τ, the score gap between the top m and the rest that stops at m* (Alg. 1)")
    temperature: Temperature | None = Field(None, description="candidates' temperature; None: the seat's")
    critique: bool = Field(True, description="add the critique q of the text and image critics to the reward")
    critique_cross_modal: bool = Field(False, description="also critique cross-modal answers (an ablation)")
    early_stop: bool = Field(True, description="apply the top-m gap rule; False scores all N and keeps the best")
    scoring: Literal["all", "lazy"] = Field(
        "all",
        description="all: score every candidate, sort, and apply the top-m gap to the sorted scores (AgentM3D's "
        "Alg. 1 as written: the best candidate always wins); lazy: score in sampling order and stop at the "
        "first m whose gap exceeds tau, which saves calls but can keep a candidate that is not the best",
    )
    critic_format: Literal["score", "prose"] = Field(
        "score", description="score: the critic answers a bare score in [0, 1] (AgentM3D); prose: a short critique ending in 1-10"
    )
    skip_unanimous: bool = Field(
        False,
        description="when every candidate reaches the same answer, keep the first unscored: scores could only "
        "change which rationale is shown, never the decision",
    )
    reward: RewardConfig = Field(default_factory=RewardConfig, description="where each candidate's reward u comes from")


class BestOfNPolicy(BestOfNSettings):
    """``best_of_n``: N candidates every turn, the best-scored one is the seat's message."""

    kind: Literal["best_of_n"] = Field(description="best_of_n: N scored candidates per turn")


class PlannedPolicy(BestOfNSettings):
    """``planned``: the planner is asked once per sample; level 0 is a single pass per turn, level 1
    is best-of-N with these settings."""

    kind: Literal["planned"] = Field(description="planned: the planner picks a single pass or best-of-N per sample")


class ReactPolicy(TurnPolicySettings):
    """``react``: the turn is one ReAct trajectory over the seat's tools, ending in its answer."""

    kind: Literal["react"] = Field(description="react: Thought/Action steps with the seat's tools, then Finish")
    tools: dict[str, str] = Field(
        default_factory=dict, description="action verb -> registered tool (Wikipedia: wikipedia_search)"
    )
    max_steps: int = Field(4, ge=1, le=12, description="the step at which a Finish is demanded")


def _kind_single_by_default(data: Any) -> Any:
    """A turn policy that names no kind is ``single``, as it always was."""
    if isinstance(data, dict) and "kind" not in data:
        return {**data, "kind": "single"}
    return data


TurnPolicyConfig = Annotated[
    Union[SinglePolicy, BestOfNPolicy, PlannedPolicy, ReactPolicy],
    Field(discriminator="kind"),
    BeforeValidator(_kind_single_by_default),
]
"""How a seat produces its message, by ``kind``: each kind takes only its own settings."""

TURN_POLICY_SETTINGS: TypeAdapter[TurnPolicyConfig] = TypeAdapter(TurnPolicyConfig)
"""Validates a turn policy on its own (``TURN_POLICY_SETTINGS.validate_python({"kind": "best_of_n", "n": 3})``)."""


class ProtocolRules(Protocol):
    """What a debate protocol says about a configuration before any debate runs."""

    name: str

    def validate(self, config: DebateConfig) -> None:
        """Raise ``ValueError`` naming the problem when the seats do not fit this protocol."""

    def answer_taxonomy(self, config: DebateConfig, sample_taxonomy: str) -> str:
        """The label set the seats answer in; the verdict is then carried over to the sample's."""

    def answers_required(self, seat: SeatConfig, config: DebateConfig) -> bool:
        """Whether a seat's message must end in a readable answer (it is retried until it does)."""

    def sees_images(self, seat: SeatConfig) -> bool:
        """Whether a seat is shown the post's images (on a vision backend)."""

    def most_turns(self, config: DebateConfig) -> dict[str, int]:
        """The most turns each seat can take in one debate (for a run's cost plan)."""

    def calls_before_turns(self, config: DebateConfig) -> int:
        """The model calls the protocol makes once per sample before the first turn."""


PROTOCOLS: Registry[ProtocolRules] = Registry("protocol", plugins=("debates.strategies.debate.protocols",))
"""Every debate protocol by name, seen through what a configuration needs of it; the built-in ones register when
:mod:`debates.strategies.debate.protocols` is imported (on the first lookup). :data:`debates.debate_engine.protocol.PROTOCOLS`
is the same registry, typed with the whole contract."""


class SeatConfig(Settings):
    """One participant of the debate: its role, where its model runs and how it takes a turn."""

    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_]*$", description="the seat's name in transcripts and verdicts (letters, digits, _)")
    role: str = Field("debater", description="a role the protocol accepts (debater, judge, actor, text, ...)")
    backend: str | None = Field(None, description="backend name; default: the debate's backend")
    model: str | None = Field(None, description="a model name the backend serves, in place of its own; None: the backend's model")
    temperature: Temperature | None = Field(None, description="this seat's sampling temperature; None: the debate's")
    stance: str | None = Field(None, description="judged debates: the label this seat must defend")
    turn_policy: TurnPolicyConfig = Field(
        default_factory=SinglePolicy, description="how the seat produces each message: single, best_of_n, planned or react"
    )


@configuration("debate")
class DebateConfig(StrategyConfig):
    """A group-chat debate: ``strategy: debate`` (the default when a configuration names a protocol)."""

    strategy: Literal["debate"] = strategy_field("debate")
    protocol: str = Field(description="a registered debate protocol: async, sync, judged, actor_skeptic, disambiguation, disambiguation_sync, cascade, chained_cascade, standard")
    framing: Literal["human", "ai"] = Field(
        "human", description="what the seats are told they debate: a human (LLM-Consensus's main setting) or another AI"
    )
    temperature: Temperature = Field(0.7, description="every seat's sampling temperature unless the seat sets its own")
    max_rounds: int = Field(3, ge=1, le=20, description="the most rounds; a debate without consensus by then ends with on_no_consensus")
    on_no_consensus: Literal["majority", "judge"] = Field(
        "majority", description="how a debate that ends without consensus is decided: the deciders' majority, or the judge seat"
    )
    majority_quorum: float = Field(
        0.5, ge=0.0, lt=1.0,
        description="a majority decides only when more than this share of the deciders gave a readable answer; "
        "with fewer the debate abstains and says so (the papers are silent; one readable vote of two is no majority)",
    )
    use_evidence: bool = Field(True, description="show the seats the evidence gathered for the post; False: the post alone")
    max_queries_per_turn: Annotated[int, Field(ge=0, le=10)] | None = Field(
        2, description="search queries a debater may ask per turn (the retrieval desk answers them); 0: none; null: as "
        "many as it writes (LLM-Consensus's disambiguation prompt sets no number, paper line 205)"
    )
    structured_turns: bool = Field(
        True, description="ask schema-capable backends for JSON turns, so answers are valid by construction"
    )
    taxonomy: str | None = Field(
        None, description="the label set the seats answer in; None: the sample's. The cascade always answers in m3d."
    )
    seats: list[SeatConfig] = Field(
        max_length=MAX_SEATS,
        description=f"the participants, in speaking order (at most {MAX_SEATS}); which roles are allowed is the protocol's rule",
    )

    @model_validator(mode="after")
    def _check_seats(self) -> "DebateConfig":
        names = [s.name for s in self.seats]
        if len(set(names)) != len(names):
            raise ValueError(f"seat names must be unique, got {names}")
        judges = [s.role for s in self.seats].count("judge")
        if judges > 1:
            raise ValueError("at most one judge")
        if self.on_no_consensus == "judge" and judges != 1:
            raise ValueError("on_no_consensus: judge needs a judge seat")
        if self.taxonomy is not None:
            get_taxonomy(self.taxonomy)
        PROTOCOLS.get(self.protocol).validate(self)
        return self

    def seat(self, name: str) -> SeatConfig:
        for seat in self.seats:
            if seat.name == name:
                return seat
        raise InputError("seat", f"no seat named {name!r}; seats: {', '.join(s.name for s in self.seats)}")

    def form(self) -> str:
        """``debate, chained_cascade: cross_modal -> text -> image``: the protocol and the seats' roles in speaking order."""
        return f"{self.strategy}, {self.protocol}: {' -> '.join(s.role for s in self.seats)}"

    def tools_used(self) -> list[str]:
        react = [t for s in self.seats if isinstance(s.turn_policy, ReactPolicy) for t in s.turn_policy.tools.values()]
        return list(dict.fromkeys([*react, *self.tools]))

    def person_seats(self) -> list[PersonSeat]:
        """Every seat: a person can take any seat of a debate, and is held to the protocol's rules for it."""
        rules = PROTOCOLS.get(self.protocol)
        turns = rules.most_turns(self)
        return [
            PersonSeat(name=seat.name, role=seat.role, stance=seat.stance, answers=rules.answers_required(seat, self),
                       sees_images=rules.sees_images(seat), most_turns=turns.get(seat.name, 1))
            for seat in self.seats
        ]

    def seat_taxonomy(self, sample_taxonomy: str) -> str:
        return PROTOCOLS.get(self.protocol).answer_taxonomy(self, sample_taxonomy)

    def most_turns(self) -> int:
        return sum(PROTOCOLS.get(self.protocol).most_turns(self).values())

    def run_by(self) -> str:
        return f"{self.strategy} / {self.protocol}"

    def outline(self) -> str:
        seats = ", ".join(f"{s.name} ({s.role}" + (f", defends {s.stance}" if s.stance else "") + ")" for s in self.seats)
        return (f"protocol {self.protocol} · told it debates a {self.framing} · {rounds_phrase(self)} · "
                f"without consensus: {self.on_no_consensus} · seats: {seats}")

    def call_budget(self) -> CallBudget:
        """Each seat's most turns (the protocol's :meth:`~debates.debate_engine.protocol.DebateProtocol.most_turns`) times
        the most calls of one turn under its turn policy, plus the protocol's calls before the first turn."""
        protocol = PROTOCOLS.get(self.protocol)
        turns = protocol.most_turns(self)
        calls = protocol.calls_before_turns(self)
        calls += sum(turns.get(seat.name, 0) * turn_calls(seat.turn_policy, seat.role) for seat in self.seats)
        return CallBudget(calls=calls, counts="each seat's most turns times its turn policy's calls")


CRITIQUED_ROLES = ("text", "image")
"""Seat roles whose best-of-N candidates a critic scores by default (cross-modal only with ``critique_cross_modal``)."""


def turn_calls(policy: TurnPolicyConfig, role: str) -> int:
    """The most model calls one turn of ``policy`` makes for a seat of ``role``, retries left out."""
    if isinstance(policy, ReactPolicy):
        return 2 * policy.max_steps
    if not isinstance(policy, BestOfNSettings):
        return 1
    critiqued = policy.critique and (role in CRITIQUED_ROLES or (role == "cross_modal" and policy.critique_cross_modal))
    scoring = 1 if policy.reward.kind == "llm_judge" else 0
    best_of_n = policy.n * (1 + scoring + int(critiqued)) + int(critiqued and role == "text")
    return best_of_n + (1 if isinstance(policy, PlannedPolicy) else 0)
