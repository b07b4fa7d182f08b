"""What a check returns: a label you can trust, or an honest abstention, plus how it was reached."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, model_validator

from m3d_agents.diagnostics import Diagnostics
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
    cut_answers: int = Field(0, description="answers the model stopped at their token cap (finish_reason length)")


class ToolUsage(BaseModel):
    """How often one tool was called for a sample, and how often it could not run."""

    calls: int = Field(0, description="calls made through the tool registry, budget refusals included")
    unavailable: int = Field(0, description="calls the tool answered 'unavailable' (no model, no key, no searcher, no vision)")


class Accounting(BaseModel):
    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = Field(0.0, description="the time backends spent answering the calls (a cache hit's is ~0), summed "
                             "over them: calls made at once each count")
    wait_s: float | None = Field(
        None, description="the time the calls waited for their turn at a backend (the run's concurrency gate, the "
        "embedded model's single slot) before they were sent, summed over them; None in rows written before it was "
        "measured"
    )
    cache_hits: int = Field(0, description="calls answered from the response cache, no model asked")
    recited_prompts: int = Field(
        0, description="calls whose answer repeats their own prompt instead of answering it (m3d_agents.recital): a model "
        "too small for the task does this"
    )
    parse_retries: int = 0
    cut_answers: int = Field(
        0, description="answers the model stopped at their token cap (finish_reason length) instead of finishing: a "
        "cap set by the configuration, the backend's max_tokens or the embedded model's answer_tokens cut them short"
    )
    by_role: dict[str, RoleUsage] = Field(default_factory=dict)
    by_agent: dict[str, RoleUsage] = Field(default_factory=dict)
    by_backend: dict[str, RoleUsage] = Field(
        default_factory=dict, description="model calls per backend that answered them, so a tool on a backend of its "
        "own is priced and counted apart from the agents"
    )
    tools: dict[str, ToolUsage] = Field(default_factory=dict, description="tool calls per tool name")


RetrievalMode = Literal["live", "record", "replay", "off"]
"""How a run gets evidence: ``live`` asks the providers every time, ``record`` reuses what the
evidence store holds and asks for the rest, ``replay`` answers from the store alone with no network,
``off`` gathers nothing."""


class ProviderReport(BaseModel):
    """What one evidence provider did for one sample (``pages`` stands for the page fetches)."""

    provider: str
    calls: int = Field(0, description="questions asked of it, answered from the network or the store")
    items: int = Field(0, description="results it gave (pages, hits, articles)")
    from_store: int = Field(0, description="answers replayed from the evidence store")
    failures: list[str] = Field(default_factory=list, description="each failed call, with why")
    not_run: str | None = Field(None, description="why it was never asked (no key, ...)")

    @property
    def status(self) -> str:
        if self.not_run is not None:
            return "not run"
        if self.failures and self.calls == len(self.failures):
            return "failed"
        return "ran" if self.calls else "not asked"


class EvidenceReport(BaseModel):
    """Where a verdict's evidence came from: which providers ran, what each gave, what failed and why.

    A run with retrieval off says so (``mode`` and ``note``), so an empty evidence list is never silent.
    """

    mode: RetrievalMode
    note: str = ""
    providers: list[ProviderReport] = Field(default_factory=list)
    kept: int = Field(0, description="evidence items given to the agents")
    dropped: int = Field(0, description="items looked at and left out (leakage rules, language, duplicates)")
    dropped_why: dict[str, int] = Field(default_factory=dict)
    network_fetches: int = Field(0, description="requests that went out to a provider or a web page")
    pages_kept: int = Field(0, description="kept items that are web pages (have a URL)")
    undated_pages_kept: int = Field(0, description="of pages_kept, those with no publication date: the date rule could not check them")
    items_lost: list[str] = Field(
        default_factory=list, description="pages the parser lost (it crashed, timed out or passed its memory limit), "
        "one line each naming the page and why; the run went on without them"
    )

    def lines(self) -> list[str]:
        """One or two lines for a console: what ran and what it gave, then what failed and why."""
        if self.mode == "off":
            return [f"evidence: retrieval off{f' ({self.note})' if self.note else ''}"]
        ran = [f"{p.provider} {p.items} result{'s' if p.items != 1 else ''}" + (f" ({p.from_store} from the store)" if p.from_store else "")
               for p in self.providers if p.calls and p.status != "failed"]
        why = ", ".join(f"{k} {v}" for k, v in sorted(self.dropped_why.items()))
        first = (f"evidence ({self.mode}): {self.kept} item{'s' if self.kept != 1 else ''} given to the agents, "
                 f"{self.dropped} dropped{f' ({why})' if why else ''}; {self.network_fetches} network fetches; "
                 + ("; ".join(ran) if ran else "no provider gave anything"))
        problems = [f"{p.provider} not run: {p.not_run}" for p in self.providers if p.not_run]
        problems += [f"{p.provider} failed {len(p.failures)}x: {p.failures[0]}" for p in self.providers if p.failures]
        problems += self.items_lost
        if self.note:
            problems.insert(0, self.note)
        return [first] + (["evidence problems: " + "; ".join(problems)] if problems else [])


class KeyPoint(BaseModel):
    """One point of an explanation and the evidence (by ``Evidence.id``) it rests on."""

    text: str
    evidence_ids: list[str] = Field(default_factory=list)


class Explanation(BaseModel):
    """Why a verdict says what it says, in the form AgentFact's explainer writes (key points citing
    evidence), so that a reader can check every point against the evidence it names."""

    claim_understanding: str = ""
    reasoning_logic: str = ""
    key_points: list[KeyPoint] = Field(default_factory=list)
    confidence_level: int | None = Field(None, ge=1, le=5, description="the explainer's own 1-5 scale, not a probability")
    label_2class: Literal["true", "false"] | None = None
    dropped_citations: int = Field(0, ge=0, description="cited ids that named no evidence shown, removed after the retries")
    cited_all_answers: int | None = Field(
        None, ge=0, description="ids cited by every answer the explainer gave, retries included (repeats count); None: "
        "not counted (rows written before it was)"
    )
    unknown_all_answers: int | None = Field(
        None, ge=0, description="of cited_all_answers, the ids that named no evidence shown (what a retry corrected included)"
    )
    display_ids: dict[str, str] = Field(
        default_factory=dict, description="Evidence.id -> the id the agents saw (E3 for text, I1 for image findings)"
    )
    image_analysis: list[str] = Field(default_factory=list, description="the image findings the explainer was shown")

    def cited_ids(self) -> list[str]:
        return list(dict.fromkeys(i for point in self.key_points for i in point.evidence_ids))


class ReviewKeyPoint(BaseModel):
    key_point: str
    evidence_ids: list[str]


class ReviewEvidence(BaseModel):
    id: str
    source: str
    reliability: str
    content: str


class ReviewRecord(BaseModel):
    """The record a human reviewer reads, with exactly the fields of AgentFact's review protocol."""

    predicted_authenticity_class: str
    predicted_authenticity_reasons: str
    predicted_authenticity_key_points: list[ReviewKeyPoint]
    evidence_list: list[ReviewEvidence]
    image_analysis_result: list[str]
    confidence_level: int | None


class Verdict(BaseModel):
    sample_id: str
    taxonomy: str = "binary"
    label: str | None = None
    is_misinformation: bool | None = None
    confidence: float | None = Field(None, ge=0.0, le=1.0)
    rationale: str = ""
    rationale_recites_prompt: bool = Field(
        False, description="the rationale is an answer that repeats its prompt (the post, the tool findings, the task) "
        "instead of giving a reason; shown as no explanation (accounting.recited_prompts counts such answers)"
    )
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
    diagnostics: Diagnostics | None = Field(
        None, description="how the strategy reached the verdict, in its own typed model; None for a verdict no strategy made"
    )
    config: str = ""
    backend: str = ""
    evidence_report: EvidenceReport | None = Field(
        None, description="what retrieval did for this sample; None when the run path gathers no evidence at all"
    )
    explanation: Explanation | None = None

    @model_validator(mode="after")
    def _consistent(self) -> "Verdict":
        self._unique_evidence()
        self._check_citations()
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

    def _unique_evidence(self) -> None:
        """Each evidence item and each id once per verdict (in first-seen order), however many agents or
        queries brought the same item: a reader counts sources, and a repeated id counts one twice."""
        self.evidence_ids = list(dict.fromkeys(self.evidence_ids))
        seen: set[str] = set()
        unique = []
        for item in self.evidence:
            if item.id not in seen:
                seen.add(item.id)
                unique.append(item)
        self.evidence = unique
        for finding in self.findings:
            finding.evidence_ids = list(dict.fromkeys(finding.evidence_ids))
        if self.explanation is not None:
            for point in self.explanation.key_points:
                point.evidence_ids = list(dict.fromkeys(point.evidence_ids))

    def _check_citations(self) -> None:
        """An explanation's cited ids are in ``evidence_ids``, and every id there names an item of ``evidence``,
        so a reader can check each citation from the verdict alone."""
        if self.explanation is None:
            return
        known = {e.id for e in self.evidence}
        unknown = [i for i in self.evidence_ids if i not in known]
        if unknown:
            raise ValueError(f"evidence_ids {unknown} name no item of evidence")
        if self.explanation is not None:
            uncited = [i for i in self.explanation.cited_ids() if i not in self.evidence_ids]
            if uncited:
                raise ValueError(f"the explanation cites {uncited}, which are not in evidence_ids")

    def review_record(self) -> ReviewRecord:
        """This verdict as a reviewer sees it: the label, the reasons, the key points with the ids the
        agents used, the evidence list and the image findings."""
        explanation = self.explanation or Explanation()
        shown = explanation.display_ids
        by_id = {e.id: e for e in self.evidence}
        listed = [by_id[i] for i in self.evidence_ids if i in by_id]
        return ReviewRecord(
            predicted_authenticity_class=self.label if self.label is not None else "abstained",
            predicted_authenticity_reasons=explanation.reasoning_logic or self.rationale or (self.abstain_reason or ""),
            predicted_authenticity_key_points=[
                ReviewKeyPoint(key_point=p.text, evidence_ids=[shown.get(i, i) for i in p.evidence_ids])
                for p in explanation.key_points
            ],
            evidence_list=[
                ReviewEvidence(
                    id=shown.get(e.id, e.id), source=e.url or e.title or e.kind, reliability=e.reliability,
                    content=e.summary or e.text,
                )
                for e in listed
            ],
            image_analysis_result=list(explanation.image_analysis),
            confidence_level=explanation.confidence_level,
        )

    @classmethod
    def abstain(cls, sample_id: str, reason: str, **fields: Any) -> "Verdict":
        return cls(sample_id=sample_id, abstained=True, abstain_reason=reason, **fields)
