"""From the board to the verdict: the label, the explanation with its citations, and the evidence itself.

The explainer's three-class label is the verdict's label (taxonomy ``factcheck3``) on a data set with the
three ratings; on a two-label data set (out of context, real or fake) the verdict takes the two-class
label, as the paper scores those (see :func:`~debates.strategies.agentfact.strategy.answer_label`). The
two-class label is derived from the three-class one (true, or false for anything else); the model's own two-class answer is
kept in the diagnostics with a flag when it disagrees. ``confidence`` is the explainer's 1-5 level
divided by 5: a scale, not a probability (the raw level stays in the explanation).

Citations are carried from display ids (E3, I1) to ``Evidence.id``. ``evidence_ids`` names every item
the explainer was shown (the useful pool and the image findings), and ``evidence`` holds every item
retrieved, the ones the screener set aside included (``kept=False`` with the reason), so a reader can
check each citation without the evidence store.
"""

from __future__ import annotations

from debates.strategies.agentfact.board import Board
from debates.strategies.agentfact.diagnostics import AgentFactDiagnostics, PoolItem
from m3d_agents.evidence import Evidence
from m3d_agents.verdict import Explanation, Finding, KeyPoint


def explanation_of(board: Board) -> Explanation | None:
    data = board.explanation
    if data is None:
        return None
    shown = [d for d, _ in board.useful()] + board.image_ids()
    label = str(data["label_3class"])
    return Explanation(
        claim_understanding=str(data.get("claim_understanding", "")),
        reasoning_logic=str(data.get("reasoning_logic", "")),
        key_points=[
            KeyPoint(text=str(p["point"]), evidence_ids=[board.evidence_id(d) for d in dict.fromkeys(p["evidence_ids"])])
            for p in data["key_points"]
        ],
        confidence_level=int(data["confidence_level"]),
        label_2class="true" if label == "true" else "false",
        dropped_citations=board.dropped_citations.get("explainer", 0),
        cited_all_answers=board.citations_all,
        unknown_all_answers=board.citations_unknown,
        display_ids={board.evidence_id(d): d for d in shown},
        image_analysis=[f.line() for f in board.images] + list(board.post_findings),
    )


def evidence_of(board: Board) -> tuple[list[Evidence], list[str]]:
    """Every item the run retrieved or was given, and the ids of those the explainer was shown."""
    items: dict[str, Evidence] = {}
    for item in [*board.er.values(), *(f.evidence for f in board.images), *board.unrelated]:
        items.setdefault(item.id, item)
    shown = [board.evidence_id(d) for d, _ in board.useful()] + [f.evidence.id for f in board.images]
    return list(items.values()), list(dict.fromkeys(shown))


def findings_of(board: Board, explanation: Explanation | None, label: str | None) -> list[Finding]:
    findings = [Finding(modality="image", summary=f.line(), evidence_ids=[f.evidence.id]) for f in board.images]
    findings += [Finding(modality="image", summary=line) for line in board.post_findings]
    findings += [Finding(modality="image", summary=f"[unavailable] {what}: {why}") for what, why in board.unavailable.items()]
    if explanation is not None:
        findings.insert(0, Finding(modality="overall", label=label, summary=explanation.reasoning_logic,
                                   evidence_ids=explanation.cited_ids()))
    return findings


def diagnostics_of(board: Board) -> AgentFactDiagnostics:
    data = board.explanation or {}
    model_two = data.get("label_2class")
    derived = None if not data else ("true" if data["label_3class"] == "true" else "false")
    return AgentFactDiagnostics(
        setting=board.config.setting,
        stop_reason=board.stop_reason,
        steps=board.steps,
        plans=len(board.plans),
        queries=list(board.queries_run),
        leakage=board.leakage_counts(),
        dropped_citations=dict(board.dropped_citations),
        label_2class_model=None if model_two is None else str(model_two),
        label_2class_disagrees=bool(data) and model_two != derived,
        explainer_attempts=board.explanation_attempts,
        pool=[
            PoolItem(id=d, evidence_id=e.id, kept=e.kept, useful=d in board.eu, reliability=e.reliability,
                     source=e.url or e.title or e.kind, reason=e.reason)
            for d, e in board.er.items()
        ],
        errors=list(board.errors),
        notes=list(board.notes),
        unavailable=dict(board.unavailable),
        unrelated_images=[e.url or e.id for e in board.unrelated],
        citations_all_answers=board.citations_all,
        citations_unknown_all_answers=board.citations_unknown,
    )
