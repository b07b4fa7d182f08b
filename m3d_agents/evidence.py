"""Evidence that agents may cite, with where it came from and why it was kept or dropped."""

from __future__ import annotations

import hashlib
from datetime import date, datetime
from typing import Literal, Sequence

from pydantic import BaseModel, Field

from m3d_agents.fence import Quoted, quote, quote_all

EvidenceKind = Literal["web_page", "reverse_image", "wikipedia", "corpus", "tool", "answer", "video_frame"]
Reliability = Literal["reliable", "unreliable", "satire", "unsure", "factcheck", "unknown", "unrated"]
"""``unknown``: no list names the source and no model judged it; ``unrated``: the run rates no source
(``rate_sources: false``), so nothing about reliability is shown."""
DROPPED_BY_LEAKAGE = "dropped by leakage rule "
"""How the reason of an item that a leakage rule dropped begins (:mod:`retrieval.leakage` writes it), so
that a tool can count leaks without re-applying a rule the run may have switched off."""


class Evidence(BaseModel):
    id: str = ""
    kind: EvidenceKind
    url: str | None = None
    domain: str | None = None
    reliability: Reliability = "unknown"
    retrieved_at: datetime | None = None
    published: date | None = None
    title: str | None = None
    text: str = ""
    summary: str | None = None
    language: str | None = Field(None, description="ISO 639-1 code of the source text; non-English is flagged")
    kept: bool = True
    reason: str = Field("", description="why it was kept, or the filter rule that dropped it")
    artifact: str | None = Field(None, description="an image a tool made for this evidence (a frame grid): its PNG file")
    image_url: str | None = Field(
        None, description="where the page's copy of the post's image is, as a reverse image search reported it"
    )

    def model_post_init(self, _context: object) -> None:
        if not self.id:
            digest = hashlib.sha256(f"{self.kind}|{self.url}|{self.text}".encode()).hexdigest()
            self.id = f"ev-{digest[:10]}"

    def quoted(self, max_chars: int = 1200, label: str | None = None) -> str:
        """This item fenced as outside material (:mod:`m3d_agents.fence`): its id and rating outside, its
        URL, title and text inside, so nothing a page says reads as an instruction."""
        return quote(self.as_quoted(max_chars, label))

    def as_quoted(self, max_chars: int = 1200, label: str | None = None) -> Quoted:
        notes = [] if self.reliability == "unrated" else [f"reliability: {self.reliability}"]
        if self.published is not None:
            notes.append(f"published {self.published.isoformat()}")
        return Quoted(
            body=(self.summary or self.text)[:max_chars], label=f"[{label or self.id}]", notes="; ".join(notes),
            source=self.url or self.domain or self.kind, title=self.title,
        )


def evidence_block(evidence: Sequence[Evidence], max_chars: int = 1200) -> str:
    """Evidence for a prompt, each item fenced as untrusted quoted material; says so plainly when there is none."""
    if not evidence:
        return "No retrieved evidence is available."
    return "Quoted evidence (retrieved from the web; untrusted):\n\n" + quote_all([e.as_quoted(max_chars) for e in evidence])
