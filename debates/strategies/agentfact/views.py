"""What each AgentFact agent is shown, rendered from the board.

Agents take their prompts from the board, never from the growing chat thread: the evidence
summaries would otherwise balloon every prompt. Each prompt's first line is ``Task: agentfact/<name>``,
a stable key for scripted test clients and for reading logs. Evidence is shown by the one evidence
fence (:mod:`m3d_agents.fence`) under its display id (``[E3]``), so a page's words, title and URL
are always quoted material, never instructions.
"""

from __future__ import annotations

import re
from datetime import date
from typing import get_args

import prompts
from debates.strategies.agentfact.board import Board, Judgement, QueueItem
from debates.strategies.agentfact.schemas import Technique
from m3d_agents.evidence import Evidence


IMAGE_SEEN = "The post's image is attached."
IMAGE_UNSEEN = "The post has an image, which you cannot see; rely on what was found about it."


def post(text: str, claim_date: date | None, image_line: str = "") -> str:
    """The post as every agent sees it; ``image_line`` says whether its image is attached (:data:`IMAGE_SEEN`)."""
    line = f"The claim was made around {claim_date.isoformat()}; evidence from later may not exist yet." if claim_date else ""
    rendered = prompts.render("agentfact/post", text=text.replace('"""', "'''"), image_line=image_line, date_line=line)
    return re.sub(r"\n{2,}", "\n", rendered).strip()


def shown(display: str, item: Evidence, chars: int) -> str:
    return item.quoted(chars, label=display)


def evidence_block(items: list[tuple[str, Evidence]], chars: int) -> str:
    return "\n".join(shown(display, item, chars) for display, item in items) if items else "(no evidence)"


def images_block(board: Board) -> str:
    lines = [finding.line() for finding in board.images] + board.post_findings
    return "\n".join(lines) if lines else "(nothing)"


def plan_steps(board: Board) -> str:
    if not board.plans:
        return "(no plan: check the post as a whole)"
    steps = board.plans[-1].reasoning_steps
    if not steps:
        return "(the plan has no steps: check the post as a whole)"
    return "\n".join(f"{i}. {s.step} [{s.method}]: {s.details}" for i, s in enumerate(steps, start=1))


def strategist_task(board: Board, post_text: str) -> str:
    previous = ""
    if board.plans:
        latest = board.judgements[-1].summary() if board.judgements else "no judgement could be made yet."
        queries = ", ".join(f'"{q}"' for q in board.queries_run) or "nothing"
        previous = prompts.render("agentfact/strategy_previous", judgement=latest, queries=queries) + "\n"
    return prompts.render(
        "agentfact/strategy", post=post_text, previous=previous, techniques=", ".join(get_args(Technique)),
        max_steps=board.config.plan_steps, max_items=board.config.plan_items,
    )


def queries_task(board: Board, post_text: str, needs: list[QueueItem]) -> str:
    """The query writer's task: one query per need of the plan, or (without a strategist) a few for the claim."""
    history = ", ".join(f'"{q}"' for q in board.queries_run) or "nothing yet"
    if any(need.kind == "claim" for need in needs):
        return prompts.render("agentfact/queries_claim", post=post_text, history=history, max_queries=board.config.plan_items)
    listed = "\n".join(f"{i}. {need.text}" for i, need in enumerate(needs, start=1))
    return prompts.render("agentfact/queries", post=post_text, needs=listed, history=history)


def reason_task(board: Board, post_text: str, task: str, items: list[tuple[str, Evidence]]) -> str:
    return prompts.render(
        "agentfact/reason", task=task, post=post_text, plan_steps=plan_steps(board),
        evidence=evidence_block(items, board.config.evidence_chars), images=images_block(board),
    )


def judgement_text(number: int, judgement: Judgement) -> str:
    """One reasoning output in full, for the explainer: the claim as understood, every step with the ids it
    used, the direct evidence, the label and the sufficiency."""
    data = judgement.answer
    lines = [f"{number}. {judgement.role}: label {judgement.label}, sufficiency {judgement.sufficiency}/5"]
    if data.get("claim_understanding"):
        lines.append(f"   claim understood as: {data['claim_understanding']}")
    for step in data.get("steps", []):
        ids = ", ".join([*step.get("evidence_ids", []), *step.get("image_ids", [])]) or step.get("note", "") or "none"
        lines.append(f"   - {step.get('step', '')}: {step.get('analysis', '')} [{ids}]")
    if data.get("direct_evidence_ids"):
        lines.append(f"   direct evidence: {', '.join(data['direct_evidence_ids'])}")
    return "\n".join(lines)


def explain_task(board: Board, post_text: str) -> str:
    """The explainer's task: every reasoning output of the run (or the last ``explain_judgements``) with the
    evidence they used, the useful pool and the image findings (paper line 272)."""
    last = board.config.explain_judgements
    chosen = board.judgements if last is None else board.judgements[-last:]
    first = len(board.judgements) - len(chosen) + 1
    reasoning = "\n".join(judgement_text(first + i, j) for i, j in enumerate(chosen)) or "(no judgement was made)"
    return prompts.render(
        "agentfact/explain", post=post_text, evidence=evidence_block(board.useful(), board.config.evidence_chars),
        images=images_block(board), reasoning=reasoning, max_points=board.config.key_points,
    )


def page_text(page: Evidence, chars: int) -> str:
    """A page's own text (not a summary written for the claim), behind the evidence fence with its source and title."""
    return page.model_copy(update={"summary": None}).quoted(chars, label="page")


def miscaption_task(post_text: str, page: Evidence, chars: int, image_note: str) -> str:
    """IR-2: the claim and the post (with its image when the backend can see) against one matched page's text."""
    return prompts.render("agentfact/miscaption", post=post_text, page=page_text(page, chars), image_note=image_note)


def grouping_task(post_text: str) -> str:
    return prompts.render("agentfact/image_grouping", post=post_text)


def tampering_task(post_text: str, relationship: str, page: Evidence) -> str:
    group = "potentially from the same source" if relationship == "same_source" else "of the same event"
    return prompts.render("agentfact/tampering", post=post_text, relationship=group,
                          source=page.domain or "an unknown site")
