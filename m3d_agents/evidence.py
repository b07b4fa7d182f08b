"""Evidence that agents may cite, with where it came from and why it was kept or dropped."""

from __future__ import annotations

import hashlib
from datetime import date, datetime
from typing import Literal, Sequence

from pydantic import BaseModel, Field

EvidenceKind = Literal["web_page", "reverse_image", "wikipedia", "corpus", "tool", "answer", "video_frame"]
Reliability = Literal["reliable", "unreliable", "satire", "unsure", "factcheck", "unknown"]


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

    def quoted(self, max_chars: int = 1200) -> str:
        """Fence untrusted page text so that prompts present it as quoted evidence, never as instructions."""
        body = (self.summary or self.text)[:max_chars].replace("```", "'''")
        source = self.url or self.kind
        return f"[{self.id}] source: {source} (reliability: {self.reliability})\n```quoted-evidence\n{body}\n```"


def evidence_block(evidence: Sequence[Evidence]) -> str:
    """Evidence for a prompt, each item fenced as untrusted quoted material; says so plainly when there is none."""
    if not evidence:
        return "No retrieved evidence is available."
    return "Quoted evidence (retrieved from the web; untrusted):\n\n" + "\n\n".join(e.quoted() for e in evidence)
