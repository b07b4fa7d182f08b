"""Debate configurations: a small declarative object (YAML validated by pydantic).

A setting of the papers is a combination of a *protocol* (who speaks when, who sees what), a
*framing* (told it debates a human or an AI) and per-seat choices (role, backend, model,
temperature, stance, turn policy). New settings are new YAML files, not new classes.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from m3d_agents.errors import InputError
from m3d_agents.labels import get_taxonomy

Protocol = Literal["async", "sync", "judged", "actor_skeptic", "disambiguation", "cascade", "standard"]
Role = Literal["debater", "judge", "actor", "skeptic", "text", "image", "cross_modal", "single"]

MODALITY_ROLES: tuple[str, ...] = ("text", "image", "cross_modal")
"""The cascade's seats, in the order they speak."""


class RewardConfig(BaseModel):
    """Where the reward u of a best-of-N candidate comes from.

    ``llm_judge`` asks the seat's own backend for a score in [0, 1]. ``sequence_classifier`` runs a
    transformers reward model (such as GRM-Gemma2-2B) from a local directory, or from a model id that
    is already in the local Hugging Face cache: nothing is downloaded at run time.
    """

    model_config = ConfigDict(extra="forbid")

    kind: Literal["llm_judge", "sequence_classifier"] = "llm_judge"
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
    early_stop: bool = Field(True, description="score lazily and stop at the top-m gap; False scores all N")
    skip_unanimous: bool = Field(
        False,
        description="when every candidate reaches the same answer, keep the first unscored: scores could only "
        "change which rationale is shown, never the decision",
    )
    reward: RewardConfig = Field(default_factory=RewardConfig)


class SeatConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[A-Za-z][A-Za-z0-9_]*$")
    role: Role = "debater"
    backend: str | None = Field(None, description="backend name; default: the debate's backend")
    model: str | None = None
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    stance: str | None = Field(None, description="judged debates: the label this seat must defend")
    turn_policy: TurnPolicyConfig = Field(default_factory=TurnPolicyConfig)


class DebateConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    description: str = ""
    protocol: Protocol
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
    def _check_roles(self) -> "DebateConfig":
        names = [s.name for s in self.seats]
        if len(set(names)) != len(names):
            raise ValueError(f"seat names must be unique, got {names}")
        roles = [s.role for s in self.seats]
        judges = roles.count("judge")
        if judges > 1:
            raise ValueError("at most one judge")
        if self.protocol == "judged":
            if judges != 1:
                raise ValueError("a judged debate needs exactly one judge seat")
            if any(s.role == "debater" and not s.stance for s in self.seats):
                raise ValueError("every debater of a judged debate needs an assigned stance")
        if self.on_no_consensus == "judge" and judges != 1:
            raise ValueError("on_no_consensus: judge needs a judge seat")
        modality = [r for r in roles if r in MODALITY_ROLES]
        if self.protocol == "cascade":
            if not modality or len(modality) != len(roles):
                raise ValueError(f"a cascade has only modality seats ({', '.join(MODALITY_ROLES)}), got {roles}")
            if modality != [r for r in MODALITY_ROLES if r in modality]:
                raise ValueError(f"cascade seats must be ordered {' -> '.join(MODALITY_ROLES)}, each once; got {roles}")
            if self.taxonomy not in (None, "m3d"):
                raise ValueError("a cascade answers in the m3d taxonomy")
        elif modality:
            raise ValueError(f"roles {modality} belong to the cascade protocol, not {self.protocol}")
        if self.protocol == "standard":
            if roles != ["single"]:
                raise ValueError(f"the standard protocol has exactly one seat of role single, got {roles}")
        elif "single" in roles:
            raise ValueError("role single belongs to the standard protocol")
        if self.taxonomy is not None:
            get_taxonomy(self.taxonomy)
        if self.protocol == "actor_skeptic":
            if roles.count("actor") != 1 or roles.count("skeptic") != 1:
                raise ValueError("actor_skeptic needs exactly one actor and one skeptic")
        elif self.protocol not in ("cascade", "standard") and not any(r == "debater" for r in roles):
            raise ValueError(f"protocol {self.protocol} needs at least one debater")
        return self

    @property
    def deciders(self) -> list[str]:
        """Seats whose answers count towards consensus."""
        if self.protocol == "actor_skeptic":
            return [s.name for s in self.seats if s.role == "actor"]
        if self.protocol in ("cascade", "standard"):
            return [s.name for s in self.seats]
        return [s.name for s in self.seats if s.role == "debater"]

    def answer_taxonomy(self, sample_taxonomy: str) -> str:
        """The label set seats answer in; the verdict is then collapsed onto the sample's taxonomy."""
        if self.protocol == "cascade":
            return "m3d"
        return self.taxonomy or sample_taxonomy

    def seat(self, name: str) -> SeatConfig:
        for seat in self.seats:
            if seat.name == name:
                return seat
        raise InputError("seat", f"no seat named {name!r}; seats: {', '.join(s.name for s in self.seats)}")


def builtin_config_names() -> list[str]:
    folder = resources.files("debates").joinpath("configs")
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


@lru_cache(maxsize=64)
def _parsed(text: str) -> DebateConfig:
    """Parsed once per distinct text: a batch run loads its configuration for every sample, and YAML
    parsing cost more CPU than a model call; keyed on the text, an edited file is read afresh."""
    return DebateConfig.model_validate(yaml.safe_load(text))


def load_config(name_or_path: str | Path) -> DebateConfig:
    """A built-in config by name (``async``, ``judged`` ...) or a YAML file by path."""
    path = Path(name_or_path)
    if path.suffix in (".yaml", ".yml") and path.is_file():
        text, origin = path.read_text(), str(path)
    else:
        resource = resources.files("debates").joinpath("configs", f"{name_or_path}.yaml")
        if not resource.is_file():
            raise InputError(
                "config", f"no configuration {name_or_path!r}; built in: {', '.join(builtin_config_names())}"
            )
        text, origin = resource.read_text(), f"debates/configs/{name_or_path}.yaml"
    try:
        return _parsed(text).model_copy(deep=True)
    except yaml.YAMLError as exc:
        raise InputError(origin, f"not valid YAML: {exc}") from exc
    except ValidationError as exc:
        raise InputError(origin, str(exc)) from exc
