"""Debate configurations: a small declarative object (YAML validated by pydantic).

A setting of the papers is a combination of a *protocol* (who speaks when, who sees what), a
*framing* (told it debates a human or an AI) and per-seat choices (role, backend, model,
temperature, stance, turn policy). New settings are new YAML files, not new classes. Which seats
a protocol accepts is the protocol's own rule (:meth:`debates.chat.protocol.DebateProtocol.validate`);
this model checks what holds for every protocol.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from debates.chat.protocol import PROTOCOLS
from debates.strategy import CallBudget, StrategyConfig
from m3d_agents.errors import InputError
from m3d_agents.labels import get_taxonomy

class RewardConfig(BaseModel):
    """Where the reward u of a best-of-N candidate comes from.

    ``llm_judge`` asks the seat's own backend for a score in [0, 1]. ``sequence_classifier`` runs a
    transformers reward model (such as GRM-Gemma2-2B) from a local directory, or from a model id that
    is already in the local Hugging Face cache: nothing is downloaded at run time.
    """

    model_config = ConfigDict(extra="forbid")

    kind: str = Field("llm_judge", description="a registered reward: llm_judge or sequence_classifier")
    model: str | None = Field(None, description="sequence_classifier: a local directory or a cached model id")
    device: str = "cpu"
    max_length: int = Field(2048, gt=0)

    @model_validator(mode="after")
    def _needs_model(self) -> "RewardConfig":
        if self.kind == "sequence_classifier" and not self.model:
            raise ValueError("reward.kind sequence_classifier needs reward.model (a local directory or model id)")
        return self


class TurnPolicyConfig(BaseModel):
    """How a seat produces its message: ``single`` (one pass), ``best_of_n``, or ``planned``.

    ``planned`` asks the planner once per sample and then behaves as ``single`` (level 0) or as
    ``best_of_n`` with the settings below (level 1).
    """

    model_config = ConfigDict(extra="forbid")

    kind: str = "single"
    n: int = Field(5, ge=1, le=64)
    tau: float = Field(0.5, ge=0.0)
    temperature: float | None = Field(None, ge=0.0, le=2.0, description="candidates' temperature; None: the seat's")
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
    reward: RewardConfig = Field(default_factory=RewardConfig)
    tools: dict[str, str] = Field(
        default_factory=dict, description="react: action verb -> registered tool (Wikipedia: wikipedia_search)"
    )
    max_steps: int = Field(4, ge=1, le=12, description="react: the step at which a Finish is demanded")


class SeatConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_]*$")
    role: str = Field("debater", description="a role the protocol accepts (debater, judge, actor, text, ...)")
    backend: str | None = Field(None, description="backend name; default: the debate's backend")
    model: str | None = None
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    stance: str | None = Field(None, description="judged debates: the label this seat must defend")
    turn_policy: TurnPolicyConfig = Field(default_factory=TurnPolicyConfig)


class DebateConfig(StrategyConfig):
    """A group-chat debate: ``strategy: debate`` (the default when a configuration names a protocol)."""

    strategy: Literal["debate"] = "debate"
    protocol: str = Field(description="a registered debate protocol: async, sync, judged, actor_skeptic, disambiguation, disambiguation_sync, cascade, chained_cascade, standard")
    framing: Literal["human", "ai"] = "human"
    backend: str | None = Field(None, description="default backend of every seat; None: the configured default")
    temperature: float = Field(0.7, ge=0.0, le=2.0)
    max_rounds: int = Field(3, ge=1, le=20)
    on_no_consensus: Literal["majority", "judge"] = "majority"
    use_evidence: bool = True
    max_queries_per_turn: int = Field(2, ge=0)
    retries: int = Field(2, ge=0)
    structured_turns: bool = Field(
        True, description="ask schema-capable backends for JSON turns, so answers are valid by construction"
    )
    taxonomy: str | None = Field(
        None, description="the label set the seats answer in; None: the sample's. The cascade always answers in m3d."
    )
    seats: list[SeatConfig]

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

    def tools_used(self) -> list[str]:
        return list(dict.fromkeys([*(t for s in self.seats for t in s.turn_policy.tools.values()), *self.tools]))

    def call_budget(self) -> CallBudget:
        """Each seat's most turns (the protocol's :meth:`~debates.chat.protocol.DebateProtocol.most_turns`) times
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
    critiqued = policy.critique and (role in CRITIQUED_ROLES or (role == "cross_modal" and policy.critique_cross_modal))
    scoring = 1 if policy.reward.kind == "llm_judge" else 0
    best_of_n = policy.n * (1 + scoring + int(critiqued)) + int(critiqued and role == "text")
    react = 2 * policy.max_steps
    return {"single": 1, "best_of_n": best_of_n, "planned": 1 + best_of_n, "react": react}.get(policy.kind, 1)
