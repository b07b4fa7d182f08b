"""Debate configurations: a small declarative object (YAML validated by pydantic).

A setting of the papers is a combination of a *protocol* (who speaks when, who sees what), a
*framing* (told it debates a human or an AI) and per-seat choices (role, backend, model,
temperature, stance, turn policy). New settings are new YAML files, not new classes.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from m3d_agents.errors import InputError

Protocol = Literal["async", "sync", "judged", "actor_skeptic", "disambiguation"]
Role = Literal["debater", "judge", "actor", "skeptic"]


class TurnPolicyConfig(BaseModel):
    """How a seat produces its message: one pass, or best-of-N (added by the selector work)."""

    model_config = ConfigDict(extra="forbid")

    kind: str = "single"
    n: int = Field(5, ge=1)
    tau: float = 0.5
    critique: bool = True


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
        if self.protocol == "actor_skeptic":
            if roles.count("actor") != 1 or roles.count("skeptic") != 1:
                raise ValueError("actor_skeptic needs exactly one actor and one skeptic")
        elif not any(r == "debater" for r in roles):
            raise ValueError(f"protocol {self.protocol} needs at least one debater")
        return self

    @property
    def deciders(self) -> list[str]:
        """Seats whose answers count towards consensus."""
        if self.protocol == "actor_skeptic":
            return [s.name for s in self.seats if s.role == "actor"]
        return [s.name for s in self.seats if s.role == "debater"]

    def seat(self, name: str) -> SeatConfig:
        for seat in self.seats:
            if seat.name == name:
                return seat
        raise InputError("seat", f"no seat named {name!r}; seats: {', '.join(s.name for s in self.seats)}")


def builtin_config_names() -> list[str]:
    folder = resources.files("debates").joinpath("configs")
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


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
        return DebateConfig.model_validate(yaml.safe_load(text))
    except yaml.YAMLError as exc:
        raise InputError(origin, f"not valid YAML: {exc}") from exc
    except ValidationError as exc:
        raise InputError(origin, str(exc)) from exc
