"""One model summary per page, focused on the claim and on the image's context (who, what, where, when),
or, for evidence found by a search query, focused on that query.

Debates read summaries rather than whole pages: LLM-Consensus summarises the top pages found by
reverse image search so that each agent's context stays small and on topic. The summary is kept on
the same Evidence (same id), so a verdict can cite it. Length is bounded by the schema: an answer
that runs over is asked again, and after the retries the page keeps its text with no summary and a
reason saying why; a summary is never made up. Pages not in English are flagged, then either
summarised in English (translated) or excluded, per config. A page summarised for a query that it
does not help answer is dropped (``kept=False``), as AgentFact's page filter drops it.
"""

from __future__ import annotations

import hashlib
from functools import lru_cache

from autogen_core.models import SystemMessage, UserMessage
from pydantic import BaseModel, Field, create_model

import prompts
from m3d_agents.fence import one_line
from m3d_agents.asking import ask
from m3d_agents.backends.factory import Backend
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.evidence import Evidence
from m3d_agents.parsing import parse_model
from retrieval.config import SummarySettings
from retrieval.store import EvidenceStore


@lru_cache(maxsize=None)
def summary_schema(max_chars: int) -> type[BaseModel]:
    return create_model(
        f"PageSummary{max_chars}",
        summary=(str, Field(..., min_length=1, max_length=max_chars)),
        relevant=(bool, ...),
    )


class SummaryOutcome(BaseModel):
    summary: str | None = None
    relevant: bool | None = None
    error: str | None = None


class Summariser:
    def __init__(self, backend: Backend, settings: SummarySettings | None = None, store: EvidenceStore | None = None) -> None:
        self.backend = backend
        self.settings = settings or SummarySettings()
        self.store = store

    def excluded(self, evidence: Evidence) -> Evidence | None:
        """The page marked as dropped when its language is excluded by config, else None."""
        if self.settings.non_english == "exclude" and evidence.language not in (None, "en"):
            return evidence.model_copy(
                update={"kept": False, "reason": f"not in English ({evidence.language}); non-English pages are excluded by config"}
            )
        return None

    async def summarise(
        self, evidence: Evidence, claim: str, image_context: str, ledger: UsageLedger, focus: str | None = None
    ) -> Evidence:
        """The page with its summary; with ``condition_on_caption`` off the summariser never sees ``claim``;
        with ``focus`` (a search query) the summary answers that query."""
        dropped = self.excluded(evidence)
        if dropped is not None:
            return dropped
        if not self.settings.condition_on_caption:
            claim = ""
        outcome = await self._outcome(evidence, claim, image_context, ledger, focus)
        notes = [evidence.reason] if evidence.reason else []
        if evidence.language not in (None, "en"):
            notes.append(f"not in English ({evidence.language}); summary translated to English")
        if outcome.summary is None:
            notes.append(f"no summary: {outcome.error}")
            return evidence.model_copy(update={"reason": "; ".join(notes)})
        if outcome.relevant is False and focus is not None:
            notes.append(f"the summariser found nothing on the page that helps answer the query {focus!r}")
            return evidence.model_copy(update={"summary": outcome.summary, "kept": False, "reason": "; ".join(notes)})
        if outcome.relevant is False:
            notes.append("the summariser found nothing relevant to the post")
        return evidence.model_copy(update={"summary": outcome.summary, "reason": "; ".join(notes)})

    async def _outcome(
        self, evidence: Evidence, claim: str, image_context: str, ledger: UsageLedger, focus: str | None
    ) -> SummaryOutcome:
        if self.store is None:
            return await self._ask(evidence, claim, image_context, ledger, focus)
        parts = [self.backend.config.fingerprint(), evidence.id, claim, image_context, str(self.settings.max_chars),
                 str(self.settings.page_chars), hashlib.sha256(evidence.text.encode()).hexdigest()]
        inputs = "\n".join(parts + ([f"query: {focus}"] if focus is not None else []))
        return await self.store.fetch(
            "summary", inputs, lambda: self._ask(evidence, claim, image_context, ledger, focus), SummaryOutcome
        )

    async def _ask(
        self, evidence: Evidence, claim: str, image_context: str, ledger: UsageLedger, focus: str | None = None
    ) -> SummaryOutcome:
        schema = summary_schema(self.settings.max_chars)
        language_note = (
            f"The page is in language '{evidence.language}'; translate what you report into English."
            if evidence.language not in (None, "en")
            else ""
        )
        page = evidence.model_copy(update={"summary": None})
        shared = {
            "evidence_id": evidence.id,
            "language_note": language_note,
            "quoted_page": page.quoted(max_chars=self.settings.page_chars),
            "max_chars": self.settings.max_chars,
        }
        if focus is not None:
            task = prompts.render("retrieval/query_summary_task", query=one_line(focus).replace('"', "'"), claim=claim, **shared)
        else:
            post = prompts.render("retrieval/summary_post", claim=claim) if claim else prompts.load("retrieval/summary_without_post")
            task = prompts.render(
                "retrieval/evidence_summary_task",
                post=post,
                focus="as they relate to the post" if claim else "about the image and the event it shows",
                relevance="bears on the post" if claim else "says anything about the image or its event",
                image_context=image_context or "nothing",
                **shared,
            )
        client = self.backend.view(ledger, agent="summariser", role="summary")

        answer = await ask(
            client,
            [SystemMessage(content=prompts.load("retrieval/evidence_summary_system")), UserMessage(content=task, source="user")],
            lambda text: parse_model(text, schema),
            create_kwargs=self.backend.structured_args(schema),
            on_retry=ledger.count_parse_retry,
        )
        if answer.value is None:
            return SummaryOutcome(error=answer.error)
        return SummaryOutcome(summary=answer.value.summary.strip(), relevant=answer.value.relevant)  # type: ignore[attr-defined]
