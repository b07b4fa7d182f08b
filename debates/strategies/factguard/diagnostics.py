"""How FactGuard's verifier decided: its turns, its tool calls, and whether it kept the format."""

from __future__ import annotations

from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from m3d_agents.diagnostics import StrategyDiagnostics


class RecordedToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    arguments: dict[str, Any]


class AgentTurnRecord(BaseModel):
    """One FactGuard agent turn as it was read."""

    model_config = ConfigDict(extra="forbid")

    attempts: int = Field(ge=0, description="asks of the model for this turn, re-asks included")
    error: str | None = Field(None, description="why the turn could not be read, after the re-asks")
    tool_calls: list[RecordedToolCall] = Field(default_factory=list)
    answer: str | None = None
    lenient: list[str] = Field(default_factory=list, description="what a strict reading refused and inference tolerated")


class FactGuardDiagnostics(StrategyDiagnostics):
    strategy: Literal["factguard"] = "factguard"
    legacy_keys: ClassVar[frozenset[str]] = frozenset({'tool_calls', 'format_ok', 'agent_turns'})
    turns: int = Field(ge=0, description="agent turns taken")
    tool_calls: dict[str, int] = Field(default_factory=dict, description="tool calls requested, by tool")
    used_tools: bool = Field(False, description="the verifier asked for at least one tool call")
    tool_calls_answered: int | None = Field(
        None, ge=0, description="tool calls that ran and answered: not refused, unavailable or failed (none in rows from before it was counted)")
    tool_refusals: dict[str, int] = Field(default_factory=dict, description="calls refused (over budget, unknown), by tool")
    tool_stats: dict[str, int] = Field(default_factory=dict)
    video_seen: bool = Field(False, description="frames of the video were shown or described")
    format_ok: bool = Field(False, description="every turn was well formed at its first attempt (the SFT rule filter)")
    agent_turns: list[AgentTurnRecord] = Field(default_factory=list)
    teacher_hint: str = Field("", description="the gold hint a teacher run was given (removed from exported SFT data)")

    @property
    def tool_answered(self) -> bool:
        """Whether a tool call ran and answered, what the tool reward pays for; a row written before
        answered calls were counted falls back to whether any call was asked for."""
        return self.used_tools if self.tool_calls_answered is None else self.tool_calls_answered > 0

