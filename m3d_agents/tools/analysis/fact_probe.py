"""FactProbe: one focused web search for a real-world fact (an event, a date, a place), as a short report.

The search itself is injected (``ToolContext.searchers["web"]``, a query answerer built by retrieval from
``--retrieval live|record|replay|off``), so this module never touches the network. What it adds is
the paper's processing: organic results only (the providers keep only those), user-generated and
social-media sources dropped, the top few kept, and a deterministic numbered report of titles,
snippets and links with evidence ids, cut to a fixed size. Pages are not read in full.
"""

from __future__ import annotations

from typing import Sequence

from pydantic import BaseModel, ConfigDict, Field

from m3d_agents.fence import one_line
from m3d_agents.evidence import DROPPED_BY_LEAKAGE, Evidence
from m3d_agents.tools.cards import ToolCard, ToolContext

NAME = "fact_probe"
DEFAULT_TOP_K = 5
DEFAULT_BUDGET = 3
REPORT_CHARS = 1200

SOCIAL_DOMAINS = (
    "facebook.com", "fb.com", "twitter.com", "x.com", "t.co", "instagram.com", "tiktok.com", "youtube.com", "youtu.be",
    "reddit.com", "weibo.com", "weibo.cn", "douyin.com", "kuaishou.com", "bilibili.com", "threads.net", "pinterest.com",
    "quora.com", "zhihu.com", "vk.com", "telegram.me", "t.me", "snapchat.com", "linkedin.com", "tumblr.com", "medium.com",
)
"""Sites whose pages are posts by anyone: the paper drops user-generated and social-media results."""


class FactProbeArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=300)


CARD = ToolCard(
    name=NAME, category="web", cost="moderate", needs_network=True, argument="query",
    purpose="Searches the web for one real-world fact the claim depends on: an event, a date, a place, who said what.",
    when_to_use="when the post states a fact that the video alone cannot confirm; write one focused query.",
    inputs="query, one short factual search query.",
    outputs="a short numbered report of the top results (title, snippet, site, date) with evidence ids; social media left out.",
)


def is_social(domain: str | None, social: Sequence[str] = SOCIAL_DOMAINS) -> bool:
    """Whether ``domain`` is one of ``social`` or under it, matched on whole labels (``m.youtube.com`` yes, ``notx.com`` no)."""
    host = (domain or "").lower().rstrip(".")
    host = host[4:] if host.startswith("www.") else host
    return any(host == site or host.endswith("." + site) for site in social)


def report_line(index: int, evidence: Evidence, snippet_chars: int = 200) -> str:
    snippet = " ".join((evidence.summary or evidence.text).split())
    if len(snippet) > snippet_chars:
        snippet = snippet[: snippet_chars - 1].rstrip() + "…"
    where = ", ".join(x for x in (one_line(evidence.domain or evidence.url or "", 120), str(evidence.published or "")) if x)
    title = one_line(evidence.title or "untitled", 200)
    return f"[{index}] {title} — {one_line(snippet)} ({where}) [{evidence.id}] {one_line(evidence.url or '')}".rstrip()


def build_report(query: str, kept: Sequence[Evidence], max_chars: int = REPORT_CHARS) -> str:
    """The numbered report: one line per result, whole lines only, at most ``max_chars`` characters."""
    head = f"{NAME} results for {query!r}:"
    if not kept:
        return f"{head} nothing usable was found."
    lines = [head]
    size = len(head)
    for index, evidence in enumerate(kept, start=1):
        line = report_line(index, evidence)
        if size + 1 + len(line) > max_chars:
            break
        lines.append(line)
        size += 1 + len(line)
    return "\n".join(lines)


def select(results: Sequence[Evidence], top_k: int, social: Sequence[str] = SOCIAL_DOMAINS) -> tuple[list[Evidence], dict[str, int]]:
    """The top ``top_k`` usable results, and how many were dropped for each reason."""
    dropped: dict[str, int] = {}
    kept: list[Evidence] = []
    for evidence in results:
        reason = None
        if not evidence.kept:
            reason = "leak" if evidence.reason.startswith(DROPPED_BY_LEAKAGE) else "filtered"
        elif is_social(evidence.domain):
            reason = "social"
        elif not (evidence.text or evidence.summary or "").strip():
            reason = "empty"
        if reason is not None:
            dropped[reason] = dropped.get(reason, 0) + 1
        elif len(kept) < top_k:
            kept.append(evidence)
    return kept, dropped


async def fact_probe(context: ToolContext, query: str) -> str:
    """Run FactProbe for the sample of ``context``; every outcome is text for the model, never an exception."""
    if not context.spend(NAME):
        return f"{NAME} budget used ({context.budgets.get(NAME)} per sample)"
    searcher = context.searchers.get("web")
    if searcher is None:
        context.stats[f"{NAME}.unavailable"] += 1
        return f"{NAME}: unavailable: no web search is configured for this run (see --retrieval)"
    results = await searcher.answer(" ".join(query.split()), context.prepared.sample, ledger=context.ledger)
    top_k = int(context.settings.get("fact_probe_top_k", DEFAULT_TOP_K))
    kept, dropped = select(results, top_k)
    for reason, count in dropped.items():
        context.stats[f"{NAME}.dropped_{reason}"] += count
    context.stats[f"{NAME}.results"] += len(kept)
    context.retrieved.extend(e for e in kept if e.id not in {r.id for r in context.retrieved})
    return build_report(query, kept, int(context.settings.get("fact_probe_report_chars", REPORT_CHARS)))
