"""The leakage filter: evidence that would hand a debate the answer instead of helping it find one.

Six rules, each logged, each leaving the dropped item in the output with ``kept=False`` and the
rule as its reason; an item is counted under the first rule that catches it, in this order:

- ``factcheck_substring``: the page's host or URL contains one of ``url_substrings`` (AgentFact's
  rule, its App. C list: any host with "factcheck" or "realitycheck" in it, whether or not a
  list names the site); off unless the configuration gives substrings;
- ``factcheck_domain``: the page is on a fact-checking site, matched by domain labels (so
  ``apnews.com`` is never caught by a rule meant for another site);
- ``factcheck_path``: the page is in the fact-check section of a site that is otherwise news
  (``reuters.com/fact-check/...``, ``apnews.com/article/fact-check-...``,
  ``bbc.co.uk/news/reality_check``, ``usatoday.com/story/news/factcheck/...``): a domain rule
  cannot catch these without dropping the whole newsroom;
- ``claim_review``: the page carries schema.org ClaimReview markup, i.e. it is a published verdict
  wherever it is hosted;
- ``after_claim_date``: the page was published after the claim, when both dates are known: later
  pages may report the debunk;
- ``undated``: with ``drop_undated``, a page with no publication date when the claim has one: the
  date rule cannot clear it, and post-debunk coverage is often undated.

``search_date_cap`` is the same rule asked of the search engine itself: providers that take a date
range (Serper) are asked for pages up to the claim date only (see :func:`capped`).
"""

from __future__ import annotations

import logging
import re
from datetime import date
from typing import Literal, get_args
from urllib.parse import urlsplit

from pydantic import BaseModel, Field

from m3d_agents.evidence import DROPPED_BY_LEAKAGE, Evidence
from retrieval.config import LeakageSettings
from retrieval.domains import domain_candidates
from retrieval.reliability import DomainRatings

log = logging.getLogger(__name__)

LeakageRule = Literal["factcheck_substring", "factcheck_domain", "factcheck_path", "claim_review", "after_claim_date", "undated"]
RULES: tuple[LeakageRule, ...] = get_args(LeakageRule)
DROPPED_BY = DROPPED_BY_LEAKAGE

FACTCHECK_PATH = re.compile(r"(?:^|[/_-])(?:fact[-_]?check(?:s|ing|er|ers)?|reality[-_]?check)(?=$|[/_.-])", re.IGNORECASE)
"""A fact-check section in a URL path: a whole path segment, or a word of a hyphenated slug."""


def factcheck_section(url: str | None) -> bool:
    """Whether the URL's path (not its host: fact-checking hosts are the domain rule's) names a fact-check section."""
    if not url:
        return False
    return bool(FACTCHECK_PATH.search(urlsplit(url).path))


def rule_of(evidence: Evidence) -> str | None:
    """The leakage rule that dropped an item, read back from its reason; None for items it kept."""
    if evidence.kept or not evidence.reason.startswith(DROPPED_BY):
        return None
    return evidence.reason[len(DROPPED_BY):].split(":", 1)[0].strip() or None


class Candidate(BaseModel):
    """Evidence plus what the filter needs to know about its page."""

    evidence: Evidence
    claim_review: bool = False


class LeakageReport(BaseModel):
    dropped: dict[str, int] = Field(default_factory=lambda: {str(rule): 0 for rule in RULES})
    checked: int = 0

    @property
    def total_dropped(self) -> int:
        return sum(self.dropped.values())

    def merge(self, other: "LeakageReport") -> None:
        self.checked += other.checked
        for rule, count in other.dropped.items():
            self.dropped[rule] = self.dropped.get(rule, 0) + count


class LeakageFilter:
    def __init__(self, ratings: DomainRatings | None = None, settings: LeakageSettings | None = None) -> None:
        self.settings = settings or LeakageSettings()
        ratings = ratings or DomainRatings.shipped()
        self.factcheck_domains = set(ratings.domains("factcheck")) | {
            d.lower().removeprefix("www.") for d in self.settings.extra_factcheck_domains
        }
        self.substrings = [part.lower() for part in self.settings.url_substrings if part.strip()]

    def is_factcheck_domain(self, host: str | None) -> bool:
        return bool(host) and any(c in self.factcheck_domains for c in domain_candidates(host or ""))

    def substring_in(self, evidence: Evidence) -> str | None:
        """The first of ``url_substrings`` in the item's host or URL (lower case), if any."""
        where = f"{evidence.domain or ''} {evidence.url or ''}".lower()
        return next((part for part in self.substrings if part in where), None)

    def rule_for(self, candidate: Candidate, claim_date: date | None) -> tuple[LeakageRule, str] | None:
        evidence = candidate.evidence
        found = self.substring_in(evidence)
        if found is not None:
            where = evidence.url or evidence.domain
            return "factcheck_substring", f"dropped by leakage rule factcheck_substring: {where} contains {found!r}"
        if self.is_factcheck_domain(evidence.domain):
            return "factcheck_domain", f"dropped by leakage rule factcheck_domain: {evidence.domain} is a fact-checking site"
        if self.settings.drop_factcheck_paths and factcheck_section(evidence.url):
            return "factcheck_path", f"dropped by leakage rule factcheck_path: {evidence.url} is in a fact-check section"
        if self.settings.drop_claim_review and candidate.claim_review:
            return "claim_review", "dropped by leakage rule claim_review: the page carries ClaimReview markup"
        if (
            self.settings.drop_after_claim_date
            and claim_date is not None
            and evidence.published is not None
            and evidence.published > claim_date
        ):
            return (
                "after_claim_date",
                f"dropped by leakage rule after_claim_date: published {evidence.published}, after the claim date {claim_date}",
            )
        if self.settings.drop_undated and claim_date is not None and evidence.published is None and evidence.url:
            return "undated", f"dropped by leakage rule undated: no publication date, so it may be later than {claim_date}"
        return None

    def apply(self, candidates: list[Candidate], claim_date: date | None) -> tuple[list[Evidence], LeakageReport]:
        """Every item comes back, the dropped ones marked, plus how many each rule dropped."""
        report = LeakageReport(checked=len(candidates))
        out: list[Evidence] = []
        for candidate in candidates:
            evidence = candidate.evidence
            hit = self.rule_for(candidate, claim_date) if self.settings.enabled and evidence.kept else None
            if hit is None:
                out.append(evidence)
                continue
            rule, reason = hit
            report.dropped[rule] += 1
            log.info("leakage filter dropped %s (%s): %s", evidence.id, evidence.url, reason)
            out.append(evidence.model_copy(update={"kept": False, "reason": reason}))
        if report.total_dropped:
            log.info("leakage filter dropped %d of %d items: %s", report.total_dropped, report.checked, report.dropped)
        return out, report


def capped(query: str, before: date | None) -> str:
    """The evidence store's key for a search capped at ``before`` (the claim date): the same query with
    another cap is another question, and an uncapped one keeps its old key."""
    return query if before is None else f"{query}\n[published up to {before.isoformat()}]"
