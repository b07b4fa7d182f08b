"""What a check returns: a label you can trust, or an honest abstention, plus how it was reached."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from m3d_agents.evidence import Evidence
from m3d_agents.labels import get_taxonomy

Modality = Literal["text", "image", "cross_modal", "video", "overall"]


class Finding(BaseModel):
    modality: Modality
    subtask: str | None = Field(None, description="the check that found it, where it is finer than a modality (a tree search's subtask)")
    label: str | None = None
    distortion: bool | None = None
    summary: str = ""
    evidence_ids: list[str] = Field(default_factory=list)


class TranscriptTurn(BaseModel):
    speaker: str
    role: str
    round: int = Field(ge=0)
    text: str
    stance: str | None = Field(None, description="the parsed answer of this turn, if it had one")
    parse_error: str | None = None


class RoleUsage(BaseModel):
    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Accounting(BaseModel):
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cache_hits: int = 0
    parse_retries: int = 0
    by_role: dict[str, RoleUsage] = Field(default_factory=dict)
    by_agent: dict[str, RoleUsage] = Field(default_factory=dict)


class Verdict(BaseModel):
    sample_id: str
    taxonomy: str = "binary"
    label: str | None = None
    is_misinformation: bool | None = None
    confidence: float | None = Field(None, ge=0.0, le=1.0)
    rationale: str = ""
    findings: list[Finding] = Field(default_factory=list)
    evidence_ids: list[str] = Field(default_factory=list)
    evidence: list[Evidence] = Field(
        default_factory=list,
        description="the evidence the strategy was given, kept or filtered out, each with its source, reliability "
        "and reason, so a run's results file shows a reviewer what the agents saw and what was dropped",
    )
    abstained: bool = False
    abstain_reason: str | None = None
    transcript: list[TranscriptTurn] = Field(default_factory=list)
    accounting: Accounting = Field(default_factory=Accounting)
    diagnostics: dict[str, Any] = Field(default_factory=dict)
    config: str = ""
    backend: str = ""

    @model_validator(mode="after")
    def _consistent(self) -> "Verdict":
        if self.abstained:
            if not self.abstain_reason:
                raise ValueError("an abstention must say why (abstain_reason)")
            self.label = None
            self.is_misinformation = None
            return self
        if self.label is None:
            raise ValueError("a verdict that does not abstain needs a label")
        taxonomy = get_taxonomy(self.taxonomy)
        self.label = taxonomy.normalise(self.label)
        self.is_misinformation = taxonomy.is_misinformation(self.label)
        return self

    @classmethod
    def abstain(cls, sample_id: str, reason: str, **fields: Any) -> "Verdict":
        return cls(sample_id=sample_id, abstained=True, abstain_reason=reason, **fields)
