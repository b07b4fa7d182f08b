"""What each AgentFact agent answers, as JSON schemas small enough for a 270M model to follow.

Evidence ids are enums built per call from the ids that call showed (:func:`judgement_schema`,
:func:`explainer_schema`), so a backend that enforces schemas cannot cite an id it was not shown,
and a backend that does not gets the answer rejected and asked again. Scores are enums too
(1..5, 0..100 in steps of ten): grammar-constrained servers enforce enums but not numeric bounds.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

Verdict3 = Literal["true", "false", "unproven"]
Verdict2 = Literal["true", "false"]
Score5 = Literal[1, 2, 3, 4, 5]
Rate = Literal[0, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
Technique = Literal[
    "divide_and_conquer", "origin_tracing", "chain_of_evidence", "cross_verification", "primary_source",
    "temporal_consistency", "reverse_image_search", "source_credibility", "logical_consistency",
]
StepNote = Literal["uses evidence", "evidence not required", "relevant evidence not found"]
Relationship = Literal["same_source", "same_event", "no_close_relationship"]
"""The paper's three groups of a matched image (paper line 229): potentially from the same source, the
same event with different content, no close relationship (dropped as noise)."""

_STRICT = ConfigDict(extra="forbid")


def text(limit: int, cap: int | None) -> Any:
    """A free-text field of at most ``limit`` characters, or ``cap`` when that is smaller: a small model
    under a grammar tends to write up to the bound, so the bound is what a smoke run can afford."""
    return (str, Field(..., max_length=min(limit, cap) if cap else limit))


class PlanStep(BaseModel):
    step: str
    method: str = Field(description="one of the techniques offered (Technique); a plan read loosely may name another")
    details: str = ""


class SentenceToCheck(BaseModel):
    sentence: str
    explanation: str = ""


class BackgroundNeed(BaseModel):
    information_needed: str


class Plan(BaseModel):
    """A plan as the board keeps it; :func:`plan_schema` bounds lists and texts when asking for one."""

    reasoning_steps: list[PlanStep] = Field(default_factory=list)
    validation_list: list[SentenceToCheck] = Field(default_factory=list)
    search_list: list[BackgroundNeed] = Field(default_factory=list)


@lru_cache(maxsize=None)
def plan_schema(max_steps: int, max_items: int, cap: int | None = None) -> type[BaseModel]:
    step = create_model("PlanStepAnswer", __config__=_STRICT, step=text(160, cap), method=(Technique, ...), details=text(300, cap))
    sentence = create_model(
        "SentenceAnswer", __config__=_STRICT, sentence=text(300, cap), explanation=text(200, cap),
    )
    need = create_model("NeedAnswer", __config__=_STRICT, information_needed=text(200, cap))
    return create_model(
        "Plan",
        __config__=_STRICT,
        reasoning_steps=(list[step], Field(..., max_length=max_steps)),
        validation_list=(list[sentence], Field(..., max_length=max_items)),
        search_list=(list[need], Field(..., max_length=max_items)),
    )


@lru_cache(maxsize=None)
def loose_plan() -> type[BaseModel]:
    """A plan with any lengths, read once the retries are spent and then cut to the plan's bounds
    (:func:`m3d_agents.bounds.fit_to_bounds`), so that an over-long field costs its tail, not the plan."""
    step = create_model("LoosePlanStep", step=(str, ...), method=(str, ""), details=(str, ""))
    sentence = create_model("LooseSentence", sentence=(str, ...), explanation=(str, ""))
    need = create_model("LooseNeed", information_needed=(str, ...))
    return create_model(
        "LoosePlan", reasoning_steps=(list[step], []), validation_list=(list[sentence], []), search_list=(list[need], []),
    )


@lru_cache(maxsize=None)
def query_schema(max_queries: int, cap: int | None = None) -> type[BaseModel]:
    query = Field(max_length=min(150, cap) if cap else 150)
    return create_model(
        "Queries",
        __config__=_STRICT,
        queries=(list[Annotated[str, query]], Field(..., max_length=max_queries)),
    )


@lru_cache(maxsize=None)
def miscaption_schema(cap: int | None = None) -> type[BaseModel]:
    """The miscaption judge's answer (IR-2): the claim restated, the comparison, the rate and why."""
    return create_model(
        "Miscaption", __config__=_STRICT,
        claim_understanding=text(300, cap), comparison=text(400, cap), miscaption_rate=(Rate, ...), reason=text(300, cap),
    )


@lru_cache(maxsize=None)
def loose_miscaption() -> type[BaseModel]:
    """A miscaption answer with any lengths, read once the retries are spent and cut to the bounds."""
    return create_model(
        "LooseMiscaption", claim_understanding=(str, ""), comparison=(str, ""), miscaption_rate=(Rate, ...), reason=(str, ""),
    )


@lru_cache(maxsize=None)
def grouping_schema(count: int, cap: int | None = None) -> type[BaseModel]:
    """Image matching (IR-1, step 1): each of ``count`` matched images in one of the paper's three groups."""
    numbers: Any = Literal[tuple(range(1, count + 1))]
    item = create_model(
        "MatchedImage", __config__=_STRICT, image=(numbers, ...), relationship=(Relationship, ...), reason=text(300, cap),
    )
    return create_model(
        "ImageGrouping", __config__=_STRICT, images=(list[item], Field(..., min_length=count, max_length=count)),
    )


@lru_cache(maxsize=None)
def tampering_schema(cap: int | None = None) -> type[BaseModel]:
    """Tampering (IR-1, step 2): the post image against its closest match, as a probability in tens."""
    return create_model(
        "Tampering", __config__=_STRICT,
        comparison=text(400, cap), tampering_probability=(Rate, ...), reason=text(300, cap),
    )


def _ids(ids: tuple[str, ...]) -> tuple[Any, dict[str, Any]]:
    """A list type whose items can only be the given ids; an empty list when none were shown."""
    if not ids:
        return list[str], {"max_length": 0}
    return list[Literal[ids]], {}  # type: ignore[valid-type]


@lru_cache(maxsize=256)
def judgement_schema(
    text_ids: tuple[str, ...], image_ids: tuple[str, ...], max_steps: int, cap: int | None = None
) -> type[BaseModel]:
    """The reasoner's answer (screener and reasoner share it): one entry per plan step, then a label."""
    text_type, text_bounds = _ids(text_ids)
    image_type, image_bounds = _ids(image_ids)
    step = create_model(
        "StepResult",
        __config__=_STRICT,
        step=text(160, cap),
        analysis=text(500, cap),
        evidence_ids=(text_type, Field(..., **text_bounds)),
        image_ids=(image_type, Field(..., **image_bounds)),
        note=(StepNote, ...),
    )
    return create_model(
        "Judgement",
        __config__=_STRICT,
        claim_understanding=text(300, cap),
        steps=(list[step], Field(..., min_length=1, max_length=max_steps)),
        direct_evidence_ids=(text_type, Field(..., **text_bounds)),
        label=(Verdict3, ...),
        sufficiency=(Score5, ...),
    )


@lru_cache(maxsize=256)
def explainer_schema(ids: tuple[str, ...], max_points: int, cap: int | None = None) -> type[BaseModel]:
    """The explainer's answer: reasons first, then key points citing the ids shown, then the labels."""
    id_type, bounds = _ids(ids)
    point = create_model(
        "KeyPointAnswer", __config__=_STRICT,
        point=text(300, cap),
        evidence_ids=(id_type, Field(..., **bounds)),
    )
    return create_model(
        "Explanation",
        __config__=_STRICT,
        claim_understanding=text(300, cap),
        reasoning_logic=text(800, cap),
        key_points=(list[point], Field(..., min_length=1, max_length=max_points)),
        label_3class=(Verdict3, ...),
        label_2class=(Verdict2, ...),
        confidence_level=(Score5, ...),
    )


@lru_cache(maxsize=None)
def loose_judgement() -> type[BaseModel]:
    """A judgement with any strings as ids: read once the retries are spent, so that the valid ids
    survive and unknown ones are counted and removed instead of losing the whole answer."""
    step = create_model(
        "LooseStepResult", step=(str, ""), analysis=(str, ""), evidence_ids=(list[str], []), image_ids=(list[str], []),
        note=(str, ""),
    )
    return create_model(
        "LooseJudgement", claim_understanding=(str, ""), steps=(list[step], ...),
        direct_evidence_ids=(list[str], []), label=(Verdict3, ...), sufficiency=(Score5, ...),
    )


@lru_cache(maxsize=None)
def loose_explanation() -> type[BaseModel]:
    """An explanation with any strings as ids, read the same way as :func:`loose_judgement`."""
    point = create_model("LooseKeyPoint", point=(str, ...), evidence_ids=(list[str], []))
    return create_model(
        "LooseExplanation", claim_understanding=(str, ""), reasoning_logic=(str, ""),
        key_points=(list[point], Field(..., min_length=1)),
        label_3class=(Verdict3, ...), label_2class=(Verdict2, ...), confidence_level=(Score5, ...),
    )
