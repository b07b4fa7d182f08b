"""The board of one AgentFact run: plans, the query queue, the evidence pools, judgements and counters.

It is plain data with small, checked mutations, so the control policy can be a pure function of it
and every rule (ids, screening, the queue) can be tested without a model. One board per sample.

Evidence ids: text evidence is ``E1, E2, ...`` in order of arrival in the retrieved pool E_r, image
findings ``I1, I2, ...``; a counter hands them out, so an id is never reused within a sample, across
replans included. Gold evidence (the evidence-bounded setting) keeps the data set's own ids and the
counter starts after them. Each display id maps to the item's ``Evidence.id``, which the verdict uses.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from debates.strategies.agentfact.schemas import Plan
from debates.strategies.agentfact.config import AgentFactConfig, Role
from m3d_agents.evidence import Evidence
from retrieval.leakage import RULES, rule_of

QueueKind = Literal["sentence", "need", "claim", "query"]
Relationship = Literal["same_source", "same_event", "unknown"]
"""A kept image finding's group: the paper's first two (the third, no close relationship, is dropped),
or unknown where no model could compare the images."""
NO_RELATIONSHIP = "no close relationship to the post image (image matching)"
SCREENED_OUT = "not used by the screener"
WHOLE_PAGE_KINDS = ("web_page", "reverse_image", "wikipedia")


def normalised(query: str) -> str:
    return " ".join(re.findall(r"\w+", query.lower()))


QUERY_WORDS = 32
"""Words of a query sent as written: search engines read about this many (Google ignores the rest)."""


def clean_query(post: str) -> str:
    """What to search when a post must be searched as written (a fallback): the claim alone when the
    post is given as "Claim: ... / Post: ...", on one line, cut to :data:`QUERY_WORDS` words, so
    the search engine gets a query and not the post's layout."""
    lines = [line.strip() for line in post.splitlines() if line.strip()]
    claim = next((line.split(":", 1)[1] for line in lines if line.lower().startswith("claim:")), " ".join(lines))
    return " ".join(claim.split()[:QUERY_WORDS])


@dataclass
class QueueItem:
    """A sentence to search verbatim, a background need waiting for its query, the claim waiting for the
    queries written for it (without a strategist), or a written query."""

    text: str
    kind: QueueKind
    plan: int


@dataclass
class ImageFinding:
    """What the visual analyst found about one page that shows the post's image."""

    id: str
    evidence: Evidence
    relationship: Relationship
    tampering: str
    miscaption_rate: int | None = None
    miscaption_reason: str = ""
    relationship_reason: str = ""

    def line(self) -> str:
        miscaption = "-" if self.miscaption_rate is None else str(self.miscaption_rate)
        reason = f" ({self.miscaption_reason})" if self.miscaption_reason else ""
        grouped = f" ({self.relationship_reason})" if self.relationship_reason else ""
        return (
            f"[{self.id}] page {self.evidence.domain or self.evidence.url or 'unknown'} ({self.evidence.reliability}): "
            f"relationship={self.relationship}{grouped}, tampering={self.tampering}, miscaption={miscaption}{reason}"
        )


@dataclass
class Judgement:
    """A screener's or reasoner's answer, with the display ids it used."""

    role: Role
    label: str
    sufficiency: int
    cited: list[str]
    answer: dict[str, Any]

    def summary(self) -> str:
        steps = "; ".join(str(s.get("analysis", "")).strip() for s in self.answer.get("steps", []) if s.get("analysis"))
        used = ", ".join(self.cited) or "none"
        return f"{self.role}: label {self.label}, sufficiency {self.sufficiency}/5, evidence used: {used}. {steps}".strip()


@dataclass
class Board:
    config: AgentFactConfig
    claim: str
    has_images: bool = False
    plans: list[Plan] = field(default_factory=list)
    queue: list[QueueItem] = field(default_factory=list)
    queries_run: list[str] = field(default_factory=list)
    er: dict[str, Evidence] = field(default_factory=dict)
    unscreened: list[str] = field(default_factory=list)
    eu: list[str] = field(default_factory=list)
    images: list[ImageFinding] = field(default_factory=list)
    unrelated: list[Evidence] = field(default_factory=list)
    """Pages whose image the image matching found no close relationship to the post's: dropped as noise."""
    post_findings: list[str] = field(default_factory=list)
    judgements: list[Judgement] = field(default_factory=list)
    steps: int = 0
    turns: int = 0
    judging_turns: int = 0
    last_role: Role | None = None
    last_judgement: Judgement | None = None
    eu_grew: bool = False
    eu_was_empty: bool = True
    must_explain: str = ""
    explained: bool = False
    stop_reason: str = ""
    explanation: dict[str, Any] | None = None
    explanation_error: str = ""
    explanation_attempts: int = 0
    errors: list[str] = field(default_factory=list)
    dropped_citations: dict[str, int] = field(default_factory=dict)
    citations_all: int = 0
    """Ids cited by every answer the explainer gave, retries included (repeats count)."""
    citations_unknown: int = 0
    """Of those, ids that named nothing the explainer was shown."""
    leaked: dict[str, set[str]] = field(default_factory=lambda: {rule: set() for rule in RULES})
    next_text: int = 1
    next_image: int = 1
    query_rounds: int = 0
    notes: list[str] = field(default_factory=list)
    unavailable: dict[str, str] = field(default_factory=dict)
    """What the paper's method does that this run could not, and why (for the verdict and the departures)."""
    """What the run changed in an answer to keep it (a plan field cut to its bound), for the diagnostics."""

    @classmethod
    def start(cls, config: AgentFactConfig, claim: str, *, has_images: bool, gold: list[Evidence] | None = None) -> "Board":
        """A fresh board; without a strategist the queue starts with the claim, for the query writer."""
        board = cls(config=config, claim=claim, has_images=has_images)
        if gold:
            board.add_gold(gold)
        if config.setting == "open_web" and not config.has("strategist"):
            board.requeue_claim()
        return board

    def requeue_claim(self) -> None:
        """Without a strategist, one more round of queries written for the claim (the w/o Agent-SP
        ablation, paper line 373: the query writer gets the claim and its context); the retriever
        starts one when the policy calls it to an empty queue."""
        self.query_rounds += 1
        self.queue.append(QueueItem(self.claim, "claim", self.query_rounds))

    # --- evidence ids --------------------------------------------------------------------------

    def add_gold(self, items: list[Evidence]) -> None:
        """The data set's evidence joins both pools under its own ids (E1... in RW-Post)."""
        for item in items:
            display = item.id if re.fullmatch(r"E\d+", item.id) else f"E{self.next_text}"
            self.er[display] = item
            self.eu.append(display)
            self.next_text = max(self.next_text, int(display[1:]) + 1)

    def _seen(self, item: Evidence) -> bool:
        text = " ".join(item.text.split())
        for known in self.er.values():
            if known.id == item.id or " ".join(known.text.split()) == text:
                return True
            if item.url and known.url == item.url and item.kind in WHOLE_PAGE_KINDS and known.kind in WHOLE_PAGE_KINDS:
                return True
        return False

    def add_retrieved(self, items: list[Evidence]) -> list[str]:
        """New kept items get fresh ids and wait for screening; already-seen pages are not added again.

        Without a screener seat every item is useful at once (the ablation without R-T).
        """
        added = []
        for item in items:
            if not item.kept or self._seen(item):
                continue
            display = f"E{self.next_text}"
            self.next_text += 1
            self.er[display] = item
            self.unscreened.append(display)
            if not self.config.has("screener"):
                self.eu.append(display)
            added.append(display)
        return added

    def add_image_finding(self, page: Evidence, relationship: Relationship, tampering: str, why: str = "") -> ImageFinding:
        finding = ImageFinding(f"I{self.next_image}", page, relationship, tampering, relationship_reason=why)
        self.next_image += 1
        self.images.append(finding)
        return finding

    def evidence_id(self, display: str) -> str:
        if display in self.er:
            return self.er[display].id
        return next(f.evidence.id for f in self.images if f.id == display)

    def image_ids(self) -> list[str]:
        return [f.id for f in self.images]

    # --- plans and the queue -------------------------------------------------------------------

    def apply_plan(self, plan: Plan) -> None:
        """The queue becomes the plan's sentences (searched verbatim), then its needs, minus what already ran."""
        self.plans.append(plan)
        sentences = [item.sentence for item in plan.validation_list]
        needs = [item.information_needed for item in plan.search_list]
        number = len(self.plans)
        ran = set(self.queries_run)
        fresh = [QueueItem(s, "sentence", number) for s in sentences if normalised(s) and normalised(s) not in ran]
        fresh += [QueueItem(n, "need", number) for n in needs if normalised(n)]
        if not fresh and not self.queries_run and self.config.search_post_if_plan_empty and self.config.setting == "open_web":
            fresh = [QueueItem(clean_query(self.claim), "sentence", number)]
        self.queue = fresh

    def pending_needs(self) -> list[QueueItem]:
        """The needs (or the claim) of the plan at the head of the queue that still wait for their queries."""
        head = self.queue[0] if self.queue else None
        return [q for q in self.queue if head is not None and q.kind in ("need", "claim") and q.plan == head.plan]

    def write_queries(self, needs: list[QueueItem], queries: list[str]) -> None:
        """Replace the plan's needs by the queries written for them, where the first need stood."""
        if not needs:
            return
        ran = set(self.queries_run)
        start = self.queue.index(needs[0])
        rest = [q for q in self.queue if q not in needs]
        written = [QueueItem(q, "query", needs[0].plan) for q in dict.fromkeys(queries) if normalised(q) and normalised(q) not in ran]
        self.queue = rest[:start] + written + rest[start:]

    def pop_query(self) -> QueueItem:
        """The next query to run, remembered so that no later plan or query writer repeats it."""
        item = self.queue.pop(0)
        self.queries_run.append(normalised(item.text))
        return item

    # --- screening and judgements --------------------------------------------------------------

    def take_batch(self) -> list[str]:
        batch = self.unscreened[: self.config.screen_batch]
        self.unscreened = self.unscreened[len(batch):]
        return batch

    def screen(self, batch: list[str], cited: set[str] | None) -> None:
        """Cited batch items join the useful pool; the others are set aside with the reason.

        ``cited`` None means the screener's answer could not be read: the whole batch joins unfiltered,
        rather than losing evidence to a parse failure.
        """
        before = len(self.eu)
        self.eu_was_empty = before == 0
        for display in batch:
            if cited is None or display in cited:
                if display not in self.eu:
                    self.eu.append(display)
            else:
                self.er[display] = self.er[display].model_copy(update={"kept": False, "reason": SCREENED_OUT})
        self.eu_grew = len(self.eu) > before

    def record_judgement(self, judgement: Judgement | None) -> None:
        self.judging_turns += 1
        self.last_judgement = judgement
        if judgement is not None:
            self.judgements.append(judgement)

    def count_dropped(self, role: str, count: int) -> None:
        if count:
            self.dropped_citations[role] = self.dropped_citations.get(role, 0) + count

    # --- leakage -------------------------------------------------------------------------------

    def record_leakage(self, items: list[Evidence]) -> None:
        """Remember each item a leakage rule dropped; a page dropped by two queries counts once."""
        for item in items:
            rule = rule_of(item)
            if rule is not None:
                self.leaked.setdefault(rule, set()).add(item.url or item.id)

    def leakage_counts(self) -> dict[str, int]:
        return {rule: len(found) for rule, found in self.leaked.items()}

    # --- turns --------------------------------------------------------------------------------

    def finish_turn(self, role: Role) -> None:
        """Count a finished turn; the configuration's ``step_roles`` are the steps ``max_steps`` bounds."""
        self.turns += 1
        self.last_role = role
        if role in self.config.step_roles():
            self.steps += 1
        if role == "explainer":
            self.explained = True

    # --- the end -------------------------------------------------------------------------------

    def explain(self, reason: str) -> None:
        self.must_explain = reason
        self.stop_reason = reason

    def useful(self) -> list[tuple[str, Evidence]]:
        return [(display, self.er[display]) for display in self.eu]
