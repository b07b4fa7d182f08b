"""What each AgentFact agent is shown, rendered from the board.

Agents take their prompts from the board, never from the growing chat thread: the evidence
summaries would otherwise balloon every prompt. Each prompt's first line is ``Task: agentfact/<name>``,
a stable key for scripted test clients and for reading logs. Evidence is shown by the one evidence
fence (:mod:`m3d_agents.fence`) under its display id (``[E3]``), so a page's words, title and URL
are always quoted material, never instructions.
"""

from __future__ import annotations

from datetime import date
from typing import get_args

import prompts
from debates.strategies.agentfact.board import Board, QueueItem
from debates.strategies.agentfact.schemas import Technique
from m3d_agents.evidence import Evidence


def post(text: str, claim_date: date | None) -> str:
    line = f"The claim was made around {claim_date.isoformat()}; evidence from later may not exist yet." if claim_date else ""
    return prompts.render("agentfact/post", text=text.replace('"""', "'''"), date_line=line).strip()


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
    history = ", ".join(f'"{q}"' for q in board.queries_run) or "nothing yet"
    listed = "\n".join(f"{i}. {need.text}" for i, need in enumerate(needs, start=1))
    return prompts.render("agentfact/queries", post=post_text, needs=listed, history=history)


def reason_task(board: Board, post_text: str, task: str, items: list[tuple[str, Evidence]]) -> str:
    return prompts.render(
        "agentfact/reason", task=task, post=post_text, plan_steps=plan_steps(board),
        evidence=evidence_block(items, board.config.evidence_chars), images=images_block(board),
    )


def explain_task(board: Board, post_text: str) -> str:
    reasoning = "\n".join(j.summary() for j in board.judgements[-2:]) or "(no judgement was made)"
    return prompts.render(
        "agentfact/explain", post=post_text, evidence=evidence_block(board.useful(), board.config.evidence_chars),
        images=images_block(board), reasoning=reasoning, max_points=board.config.key_points,
    )


def miscaption_task(post_text: str, page: Evidence, chars: int) -> str:
    return prompts.render("agentfact/miscaption", post=post_text, page=page.quoted(chars, label="page"))
