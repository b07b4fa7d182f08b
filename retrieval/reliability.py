"""How far a source can be trusted: reliable, unreliable, satire, unsure or factcheck.

Ratings come first from a curated list that ships with the project (``retrieval/data/
domain_ratings.csv``) and from an optional list of the user's own, which wins. Domains that no list
names may be judged by a model, once per domain and model configuration, with the answer cached in
the evidence store. Without a list entry or a model, a domain stays ``unknown``: a rating is never
made up.
"""

from __future__ import annotations

import csv
import logging
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Literal, get_args

from autogen_core.models import SystemMessage, UserMessage
from pydantic import BaseModel, Field

import prompts
from m3d_agents.asking import ask
from m3d_agents.backends.factory import Backend
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.errors import InputError
from m3d_agents.evidence import Reliability
from m3d_agents.parsing import parse_model
from retrieval.domains import domain_candidates, registered_domain
from retrieval.store import EvidenceStore

log = logging.getLogger(__name__)

Rating = Literal["reliable", "unreliable", "satire", "unsure", "factcheck"]
RATINGS: tuple[str, ...] = get_args(Rating)


class DomainRating(BaseModel):
    domain: str
    rating: Rating
    note: str = ""
    source: str = Field("list", description="list, user list, or model")


class DomainRatings:
    """Ratings by domain, matched label by label (never by substring), most specific entry first."""

    def __init__(self, entries: dict[str, DomainRating] | None = None) -> None:
        self.entries: dict[str, DomainRating] = dict(entries or {})

    @classmethod
    def shipped(cls) -> "DomainRatings":
        return cls(_shipped_entries())

    @classmethod
    def load(cls, user_list: Path | None = None) -> "DomainRatings":
        ratings = cls.shipped()
        if user_list is not None:
            if not user_list.is_file():
                raise InputError("reliability_list", f"{user_list} does not exist")
            ratings.entries.update(_parse(user_list.read_text(encoding="utf-8"), str(user_list), "user list"))
        return ratings

    def lookup(self, host: str) -> DomainRating | None:
        for candidate in domain_candidates(host):
            if candidate in self.entries:
                return self.entries[candidate]
        return None

    def domains(self, rating: Rating) -> list[str]:
        return sorted(d for d, r in self.entries.items() if r.rating == rating)


@lru_cache(maxsize=1)
def _shipped() -> dict[str, DomainRating]:
    text = resources.files("retrieval").joinpath("data/domain_ratings.csv").read_text(encoding="utf-8")
    return _parse(text, "retrieval/data/domain_ratings.csv", "list")


def _shipped_entries() -> dict[str, DomainRating]:
    """The shipped list, read once per process (every run's policy starts from it); a copy, since a user list updates it."""
    return dict(_shipped())


def _parse(text: str, origin: str, source: str) -> dict[str, DomainRating]:
    entries: dict[str, DomainRating] = {}
    lines = [line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]
    for number, row in enumerate(csv.DictReader(lines), start=2):
        domain = (row.get("domain") or "").strip().lower()
        rating = (row.get("rating") or "").strip().lower()
        if not domain or " " in domain or "/" in domain:
            raise InputError(origin, f"row {number}: {domain!r} is not a domain name")
        if rating not in RATINGS:
            raise InputError(origin, f"row {number}: rating {rating!r} is not one of {', '.join(RATINGS)}")
        entries[domain.removeprefix("www.")] = DomainRating(
            domain=domain, rating=rating, note=(row.get("note") or "").strip(), source=source
        )
    return entries


class ModelJudgement(BaseModel):
    rating: Rating
    reason: str = Field(..., max_length=300)


class ReliabilityRater:
    """Rates a domain from the lists, else by a cached model judgement, else ``unknown``."""

    def __init__(
        self,
        ratings: DomainRatings | None = None,
        judge: Backend | None = None,
        store: EvidenceStore | None = None,
        enabled: bool = True,
    ) -> None:
        """``enabled`` False: a run that rates no source (``rate_sources: false``); every item is ``unrated``."""
        self.ratings = ratings or DomainRatings.shipped()
        self.judge = judge if enabled else None
        self.store = store
        self.enabled = enabled
        self._memory: dict[str, DomainRating | None] = {}

    async def rate(self, host: str | None, ledger: UsageLedger | None = None) -> tuple[Reliability, str]:
        """The rating and a short note saying where it came from."""
        if not self.enabled:
            return "unrated", "the run rates no source"
        if not host:
            return "unknown", "no domain"
        listed = self.ratings.lookup(host)
        if listed is not None:
            return listed.rating, f"{listed.source}: {listed.domain} ({listed.note})" if listed.note else listed.source
        judged = await self._judge(registered_domain(host), ledger or UsageLedger())
        if judged is None:
            return "unknown", "no list entry and no model judgement"
        return judged.rating, f"model: {judged.note}"

    async def _judge(self, domain: str, ledger: UsageLedger) -> DomainRating | None:
        if self.judge is None:
            return None
        if domain in self._memory:
            return self._memory[domain]
        judge = self.judge

        async def ask_model() -> DomainRating | None:
            client = judge.view(ledger, agent="reliability", role="reliability")
            answer = await ask(
                client,
                [
                    SystemMessage(content=prompts.load("retrieval/domain_reliability_system")),
                    UserMessage(content=prompts.render("retrieval/domain_reliability_task", domain=domain), source="user"),
                ],
                lambda text: parse_model(text, ModelJudgement),
                create_kwargs=judge.structured_args(ModelJudgement),
            )
            if answer.value is None:
                log.info("no reliability judgement for %s: %s", domain, answer.error)
                return None
            value = answer.value
            return DomainRating(domain=domain, rating=value.rating, note=value.reason, source="model")

        if self.store is not None:
            query = f"{judge.config.fingerprint()}|{domain}"
            result = await self.store.fetch("reliability-judgement", query, ask_model, DomainRating | None)
        else:
            result = await ask_model()
        self._memory[domain] = result
        return result
