"""When an image first appeared online, from the publication dates of reverse-image-search matches.

An image that was online long before the event it supposedly shows is the classic out-of-context
reuse; the earliest dated match is the evidence for that.
"""

from __future__ import annotations

from datetime import date
from typing import Sequence

from pydantic import BaseModel

from m3d_agents.evidence import Evidence

NAME = "time_detection"
REUSE_MARGIN_DAYS = 2


class FirstAppearance(BaseModel):
    earliest: date | None = None
    evidence_id: str | None = None
    url: str | None = None
    dated_matches: int = 0
    undated_matches: int = 0
    days_before_claim: int | None = None
    predates_claim: bool | None = None
    finding: str

    def for_agents(self) -> str:
        return f"{NAME}: {self.finding}"


def earliest_appearance(evidence: Sequence[Evidence], claim_date: date | None = None) -> FirstAppearance:
    matches = [e for e in evidence if e.kind == "reverse_image" and e.kept]
    dated = sorted((e for e in matches if e.published is not None), key=lambda e: e.published)  # type: ignore[arg-type, return-value]
    undated = len(matches) - len(dated)
    if not matches:
        return FirstAppearance(finding="no reverse image search matches to date the image")
    if not dated:
        return FirstAppearance(undated_matches=undated, finding=f"none of the {undated} matched pages has a publication date")
    first = dated[0]
    assert first.published is not None
    where = first.domain or first.url or first.id
    finding = f"earliest of {len(dated)} dated matches: {first.published.isoformat()} on {where} [{first.id}]"
    days = predates = None
    if claim_date is not None:
        days = (claim_date - first.published).days
        predates = days > REUSE_MARGIN_DAYS
        if predates:
            finding += f"; that is {days} days before the claim date {claim_date.isoformat()}, so the image is older than the claimed event"
        else:
            finding += f"; not earlier than the claim date {claim_date.isoformat()}"
    return FirstAppearance(
        earliest=first.published, evidence_id=first.id, url=first.url, dated_matches=len(dated),
        undated_matches=undated, days_before_claim=days, predates_claim=predates, finding=finding,
    )
