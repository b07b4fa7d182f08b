"""The AgentFact agents as group-chat participants: each reads the board, acts, writes its result to the
board, then replies with a readable account of what it did (what the transcript and the CLI show).

- the strategist plans (steps, sentences to check, background to search); a replan is shown the
  latest judgement and the queries already run;
- the retriever turns background needs into queries (one call per plan, shown the query history;
  without a strategist, up to ``plan_items`` queries for the claim, round after round), then runs
  one query per turn through the run's web searcher (whose answers the run context has screened
  with the run's leakage and reliability settings) and adds new items to the retrieved pool under
  fresh ids;
- the visual analyst (Agent-IR) reads the reverse-image pages once per sample, screened by the run's
  evidence policy. On a vision backend it downloads the matched images through the fetch guards,
  has the model sort them into the paper's three groups (dropping those with no close
  relationship), scores tampering against the closest match, and judges each kept page's
  miscaption from the page's own text and the image; on a text-only backend the relationship comes
  from the search's match kind, tampering is unavailable and the miscaption judgement reads the
  texts alone, each said in the findings. The learned-detector slot (a DIRE-style checkpoint)
  scores the post image for the paper's deepfake score;
- the screener reads a batch of new items and keeps the ones it uses; the reasoner reads the whole
  useful pool; both answer with a judgement (label and sufficiency);
- the explainer writes the verdict with key points citing the ids it was shown.

Agents whose backend can see are shown the post's image with the post (``post_image``). Ids a
model cites that it was not shown are rejected and asked again; once the retries are spent, the
valid ids of the last answer are kept and the others counted and removed, never invented. An
answer whose only fault is an over-long field is cut to its bounds and the cut recorded.
"""

from __future__ import annotations

from abc import abstractmethod

import asyncio
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence, TypeVar

from autogen_agentchat.agents import BaseChatAgent
from autogen_agentchat.base import Response
from autogen_agentchat.messages import BaseChatMessage, TextMessage
from autogen_core import CancellationToken
from autogen_core import Image as AgentImage
from autogen_core.models import SystemMessage, UserMessage
from pydantic import BaseModel, ValidationError

import prompts
from debates.strategies.agentfact import views
from debates.strategies.agentfact.board import NO_RELATIONSHIP, Board, ImageFinding, Judgement, Relationship, clean_query
from debates.strategies.agentfact.schemas import (
    Plan,
    SentenceToCheck,
    explainer_schema,
    grouping_schema,
    judgement_schema,
    loose_explanation,
    loose_judgement,
    loose_miscaption,
    loose_plan,
    miscaption_schema,
    plan_schema,
    query_schema,
    tampering_schema,
)
from debates.strategies.agentfact.config import AgentFactConfig, Role
from debates.strategy import RunContext
from m3d_agents.asking import Answer, ask
from m3d_agents.backends.config import ToolBinding
from m3d_agents.backends.factory import Backend
from m3d_agents.bounds import fit_to_bounds
from m3d_agents.errors import BackendError, InputError, ParseError
from m3d_agents.evidence import Evidence
from m3d_agents.media.images import PreparedImage, PreparedSample, decode_image
from m3d_agents.media.message_images import message_image
from m3d_agents.parsing import parse_json_object, parse_model
from m3d_agents.sample import Sample
from m3d_agents.tools.forensics.fusion import fuse, run_forensics
from m3d_agents.tools.forensics.learned import NAME as DETECTOR
from m3d_agents.tools.forensics.learned import analyse_learned
from retrieval.interfaces import MatchedImages, QueryAnswerer
from retrieval.pipeline import match_kind

M = TypeVar("M", bound=BaseModel)
NO_VISION = "unavailable: backend has no vision"
Content = list[str | AgentImage]


@dataclass
class Workflow:
    """What every participant of one run shares."""

    config: AgentFactConfig
    board: Board
    sample: Sample
    prepared: PreparedSample
    ctx: RunContext
    backends: dict[Role, Backend]
    notes: dict[str, tuple[str | None, str | None]]
    """Speaker -> (stance, parse error) of the turn it is about to post, for the transcript."""
    detector: ToolBinding = field(default_factory=ToolBinding)
    """The learned detector's settings for this run (``tools: {learned_detector: ...}``): its weights, a DIRE-style
    checkpoint, and the label that means manipulated; no weights: ``M3D_FORGERY_MODEL`` if set."""

    def sees(self, role: Role) -> bool:
        """Whether ``role`` is shown the post's image: it has one, the configuration says so and the backend can see."""
        return bool(self.prepared.images) and role in self.config.post_image and self.backends[role].vision

    def post(self, role: Role) -> str:
        line = "" if not self.prepared.images else views.IMAGE_SEEN if self.sees(role) else views.IMAGE_UNSEEN
        if self.prepared.images and role in self.config.post_image and not self.backends[role].vision:
            self.board.unavailable.setdefault(f"post_image:{role}", f"the {role}'s backend has no vision, so it never sees the post's image")
        return views.post(self.sample.text, self.sample.metadata.claim_date, line)

    def post_images(self, role: Role) -> list[AgentImage]:
        return [message_image(image.image) for image in self.prepared.images] if self.sees(role) else []


def read_ids(
    answer: Answer[Any], loose: type[BaseModel], allowed: Sequence[str]
) -> tuple[dict[str, Any] | None, int, str | None]:
    """The answer as data, the number of unknown ids removed, and why it is unreadable when it is."""
    if answer.value is not None:
        return answer.value.model_dump(), 0, None
    try:
        data = parse_model(answer.text, loose).model_dump()
    except ParseError:
        return None, 0, answer.error
    known, dropped = set(allowed), 0

    def keep(ids: list[str]) -> list[str]:
        nonlocal dropped
        dropped += sum(1 for i in ids if i not in known)
        return [i for i in ids if i in known]

    for step in data.get("steps", []):
        step["evidence_ids"], step["image_ids"] = keep(step.get("evidence_ids", [])), keep(step.get("image_ids", []))
    if "direct_evidence_ids" in data:
        data["direct_evidence_ids"] = keep(data["direct_evidence_ids"])
    for point in data.get("key_points", []):
        point["evidence_ids"] = keep(point.get("evidence_ids", []))
    return data, dropped, None


def cited_in(text: str) -> list[str] | None:
    """Every id an explanation's key points cite, repeats included; None when the text holds no readable explanation."""
    try:
        data = parse_model(text, loose_explanation())
    except ParseError:
        return None
    return [i for point in data.model_dump()["key_points"] for i in point["evidence_ids"]]


def fitted(answer: Answer[Any], loose: type[BaseModel], strict: type[M]) -> tuple[M | None, list[str]]:
    """An unreadable answer read loosely and cut to ``strict``'s length bounds, with the cuts; None when even that fails."""
    try:
        data = parse_model(answer.text, loose).model_dump()
    except ParseError:
        try:
            data = parse_json_object(answer.text)
        except ParseError:
            return None, []
    cut, cuts = fit_to_bounds(strict, data)
    try:
        return strict.model_validate(cut), cuts
    except ValidationError:
        return None, []


class Participant(BaseChatAgent):
    """A workflow agent: ``act`` changes the board and returns its account, stance and parse error."""

    role: Role

    def __init__(self, role: Role, flow: Workflow, description: str) -> None:
        super().__init__(role, description=description)
        self.role = role
        self.flow = flow

    @property
    def produced_message_types(self) -> Sequence[type[BaseChatMessage]]:
        return (TextMessage,)

    @abstractmethod
    async def act(self) -> tuple[str, str | None, str | None]:
        """Do this participant's step on the board; return the message, the stance it states and any error."""

    async def on_messages(self, messages: Sequence[BaseChatMessage], cancellation_token: CancellationToken) -> Response:
        working = asyncio.ensure_future(self.act())
        # Every model and retrieval call of the turn stops when the run does.
        cancellation_token.link_future(working)
        text, stance, error = await working
        self.flow.notes[self.name] = (stance, error)
        self.flow.board.finish_turn(self.role)
        return Response(chat_message=TextMessage(content=text, source=self.name))

    async def on_reset(self, cancellation_token: CancellationToken) -> None:
        pass

    @property
    def post(self) -> str:
        return self.flow.post(self.role)

    async def ask_model(
        self, task: str, schema: type[M], call: str | None = None, *, attach: Content | None = None,
        attempts: list[str] | None = None,
    ) -> Answer[M]:
        """One structured question to this seat's backend, metered under the seat and ``call``.

        ``attach`` follows the task in the user message (images and their captions); by default the
        post's images when this seat sees them. ``attempts`` receives the text of every answer, retries included.
        """
        flow = self.flow
        backend = flow.backends[self.role]
        sampling: dict[str, Any] = {"seed": flow.ctx.seed_for("agentfact", self.role)}
        if flow.config.temperature is not None:
            sampling["temperature"] = flow.config.temperature
        if flow.config.max_tokens is not None:
            sampling["max_tokens"] = flow.config.max_tokens
        structured = backend.structured_args(schema)
        create = {"extra_create_args": {**structured.get("extra_create_args", {}), **sampling}}
        extra: Content = list(flow.post_images(self.role)) if attach is None else attach
        content: str | Content = [task, *extra] if extra else task

        def parse(text: str) -> M:
            if attempts is not None:
                attempts.append(text)
            return parse_model(text, schema)

        return await ask(
            backend.view(flow.ctx.ledger, agent=self.name, role=call or self.role),
            [SystemMessage(content=prompts.load("agentfact/system")), UserMessage(content=content, source="user")],
            parse, retries=flow.config.parse_retries, create_kwargs=create, on_retry=flow.ctx.ledger.count_parse_retry,
        )


class Strategist(Participant):
    async def act(self) -> tuple[str, str | None, str | None]:
        flow, board, config = self.flow, self.flow.board, self.flow.config
        schema = plan_schema(config.plan_steps, config.plan_items, config.text_chars)
        answer = await self.ask_model(views.strategist_task(board, self.post), schema)
        note = ""
        if answer.value is not None:
            board.apply_plan(Plan.model_validate(answer.value.model_dump()))
        else:
            cut, cuts = fitted(answer, loose_plan(), schema)
            if cut is not None:
                board.apply_plan(Plan.model_validate(cut.model_dump()))
                board.notes.append(f"strategist: plan {len(board.plans)} kept with fields cut to their bounds: {'; '.join(cuts)}")
                note = "\n(fields over their length bounds were cut: " + "; ".join(cuts) + ")"
            else:
                query = clean_query(flow.sample.text)
                board.apply_plan(Plan(validation_list=[SentenceToCheck(sentence=query, explanation="the claim as a whole")]))
                board.errors.append(
                    f"strategist: unreadable plan after {answer.attempts} attempts ({answer.error}); the claim is searched as it is"
                )
                note = "\n(the plan could not be read; the claim itself is searched)"
        return render_plan(board, len(board.plans)) + note, None, answer.error


def render_plan(board: Board, number: int) -> str:
    plan = board.plans[number - 1]
    lines = [f"Plan {number}" + (" (a replan)" if number > 1 else "")]
    lines += [f"{i}. {s.step} [{s.method}]: {s.details}" for i, s in enumerate(plan.reasoning_steps, start=1)]
    lines += [f"check: {s.sentence}" for s in plan.validation_list]
    lines += [f"search: {n.information_needed}" for n in plan.search_list]
    if len(lines) == 1:
        lines.append("(nothing to check or search)")
    return "\n".join(lines)


class Retriever(Participant):
    def __init__(self, role: Role, flow: Workflow, description: str, answerer: QueryAnswerer | None) -> None:
        super().__init__(role, flow, description)
        self.answerer = answerer

    async def act(self) -> tuple[str, str | None, str | None]:
        board = self.flow.board
        error = None
        if not board.queue and not self.flow.config.has("strategist"):
            board.requeue_claim()
        needs = board.pending_needs()
        if needs:
            error = await self.write_queries(needs)
        if not board.queue:
            return "The query writer wrote no new query (common knowledge, or everything was searched already).", None, error
        query = board.pop_query().text
        if self.answerer is None:
            if not any(e.startswith("retriever: no web search") for e in board.errors):
                board.errors.append("retriever: no web search is configured for this run; queries return nothing")
            return f"Query: {query}\nNo web search is configured for this run: nothing was retrieved.", None, error
        found = await self.answerer.answer(query, self.flow.sample, ledger=self.flow.ctx.ledger)
        board.record_leakage(found)
        kept = [e for e in found if e.kept][: self.flow.config.per_query_items]
        added = board.add_retrieved(kept)
        lines = [f"Query: {query}"]
        lines += [views.shown(d, board.er[d], 300) for d in added] or ["No new evidence."]
        dropped = len(found) - sum(1 for e in found if e.kept)
        if dropped:
            lines.append(f"({dropped} item(s) left out: leakage filter, irrelevance or the per-query limit)")
        return "\n".join(lines), None, error

    async def write_queries(self, needs: list[Any]) -> str | None:
        """One call turns every pending need of the plan into a query (or the claim into up to ``plan_items``
        queries); an over-long answer is cut to its bounds, an unreadable one searches the needs as written."""
        board, config = self.flow.board, self.flow.config
        most = config.plan_items if any(n.kind == "claim" for n in needs) else len(needs)
        schema = query_schema(max(most, 1), config.text_chars)
        answer = await self.ask_model(views.queries_task(board, self.post, needs), schema, "query_writer")
        value, cuts = (answer.value, []) if answer.value is not None else fitted(answer, schema, schema)
        if value is not None:
            if cuts:
                board.notes.append(f"query writer: queries kept with fields cut to their bounds: {'; '.join(cuts)}")
            board.write_queries(needs, [str(q) for q in value.model_dump()["queries"]])
        else:
            board.errors.append(f"retriever: unreadable queries after {answer.attempts} attempts ({answer.error}); needs searched as written")
            board.write_queries(needs, [clean_query(n.text) for n in needs])
        return answer.error


@dataclass
class Matched:
    """One reverse-image page as Agent-IR handles it: its downloaded image, or why there is none, and its group."""

    page: Evidence
    image: PreparedImage | None = None
    problem: str = ""
    relationship: str = ""
    why: str = ""


class VisualAnalyst(Participant):
    """Agent-IR (paper lines 219-241): image matching, tampering, miscaption and the deepfake score."""

    async def act(self) -> tuple[str, str | None, str | None]:
        flow, board, config = self.flow, self.flow.board, self.flow.config
        lines: list[str] = []
        errors: list[str] = []
        found = await self.reverse_pages(lines)
        for item in found:
            if item.kept and not item.url and item.text.strip():
                board.post_findings.append(f"[reverse image search] {item.text.strip()}")
        pages = [Matched(e) for e in found if e.kept and e.url][: config.reverse_pages]
        vision = flow.backends[self.role].vision and bool(flow.prepared.images)
        if pages and config.image_matching:
            if vision:
                errors += await self.group(pages)
            else:
                flow.board.unavailable.setdefault("image_matching", "backend has no vision: the matched images are not compared "
                                            "with the post's, so none is dropped as unrelated and no tampering score is made")
        for match in pages:
            if match.relationship == "no_close_relationship":
                board.unrelated.append(match.page.model_copy(update={"kept": False, "reason": f"{NO_RELATIONSHIP}: {match.why}"}))
                continue
            relationship, why = self.relationship(match, vision)
            board.add_image_finding(match.page, relationship, "-", why)
        if board.images:
            errors += await self.tampering(pages, vision)
        if config.miscaption:
            for finding in board.images:
                error = await self.miscaption(finding, vision)
                if error:
                    errors.append(error)
        self.post_scores()
        lines += [f.line() for f in board.images] + [f"[dropped] {e.url}: {e.reason}" for e in board.unrelated]
        lines += board.post_findings
        if not lines:
            lines.append("Reverse image search found no page to compare with.")
        return "\n".join(lines), None, errors[-1] if errors else None

    async def reverse_pages(self, lines: list[str]) -> list[Evidence]:
        """The reverse image search's pages from the run's evidence step (screened by its evidence policy), dropped ones included."""
        flow = self.flow
        if flow.ctx.evidence_source is None:
            lines.append("No reverse image search is configured for this run.")
            return []
        gathered = await flow.ctx.gather_evidence(flow.sample, dropped=True)
        found = [e for e in gathered if e.kind == "reverse_image"]
        flow.board.record_leakage(found)
        return found

    def relationship(self, match: Matched, vision: bool) -> tuple[Relationship, str]:
        """The kept page's group: the model's, else the search's match kind with the reason no model compared them."""
        if match.relationship in ("same_source", "same_event"):
            return match.relationship, match.why  # type: ignore[return-value]
        kind = match_kind(match.page)
        guess: Relationship = "same_source" if kind in ("full", "partial") else "unknown"
        if not vision:
            return guess, f"from the search's {kind or 'unknown'} match; {NO_VISION}"
        return guess, f"from the search's {kind or 'unknown'} match; not compared: {match.problem or 'no answer'}"

    async def download(self, match: Matched) -> None:
        flow = self.flow
        source = flow.ctx.evidence_source
        if not match.page.image_url:
            match.problem = "the search gave no address for the matched image"
        elif not isinstance(source, MatchedImages):
            match.problem = "this run's evidence source downloads no images"
        else:
            try:
                fetched = await source.matched_image(match.page.image_url, flow.sample)
                match.image = decode_image(fetched.data(), match.page.image_url, flow.ctx.limits, field="matched image")
            except BackendError as exc:
                match.problem = f"the matched image could not be downloaded ({exc})"
            except InputError as exc:
                match.problem = f"the matched image could not be read ({exc.problem})"

    async def group(self, pages: list[Matched]) -> list[str]:
        """Image matching (IR-1, step 1): the downloaded images, with the post's first, sorted into the three groups."""
        flow, config = self.flow, self.flow.config
        await asyncio.gather(*(self.download(match) for match in pages))
        shown = [(match, match.image) for match in pages if match.image is not None]
        if not shown:
            return []
        attach: Content = ["The post's image:", *[message_image(i.image) for i in flow.prepared.images[:1]]]
        for number, (match, image) in enumerate(shown, start=1):
            attach += [f"Image {number}, on {match.page.domain or match.page.url}:", message_image(image.image)]
        schema = grouping_schema(len(shown), config.text_chars)
        answer = await self.ask_model(views.grouping_task(self.post), schema, "image_matching", attach=attach)
        value, cuts = (answer.value, []) if answer.value is not None else fitted(answer, schema, schema)
        if value is None:
            for match, _image in shown:
                match.problem = f"the image matching answer could not be read after {answer.attempts} attempts"
            return [answer.error or "unreadable"]
        if cuts:
            flow.board.notes.append(f"image matching: kept with fields cut to their bounds: {'; '.join(cuts)}")
        for item in value.model_dump()["images"]:
            match = shown[int(item["image"]) - 1][0]
            match.relationship, match.why = str(item["relationship"]), str(item["reason"]).strip()
        return [answer.error] if answer.error else []

    async def tampering(self, pages: list[Matched], vision: bool) -> list[str]:
        """s_tamper (IR-1, step 2): the post image against its closest match, set on that match's finding."""
        flow, board, config = self.flow, self.flow.board, self.flow.config
        if not vision or not config.image_matching:
            reason = NO_VISION if not vision else "unavailable: image matching is off"
            for finding in board.images:
                finding.tampering = reason
            flow.board.unavailable.setdefault("tampering", f"the tampering score needs the images compared: {reason}")
            return []
        by_page = {match.page.id: match for match in pages}
        closest = next((f for f in board.images if f.relationship == "same_source" and by_page[f.evidence.id].image), None) \
            or next((f for f in board.images if f.relationship == "same_event" and by_page[f.evidence.id].image), None)
        if closest is None:
            for finding in board.images:
                finding.tampering = "unavailable: no downloaded match is close enough to compare"
            flow.board.unavailable.setdefault("tampering", "no downloaded matched image was close enough to compare with the post's")
            return []
        image = by_page[closest.evidence.id].image
        if image is None:
            return []
        attach: Content = ["The post's image:", *[message_image(i.image) for i in flow.prepared.images[:1]],
                           "The closest match:", message_image(image.image)]
        schema = tampering_schema(config.text_chars)
        answer = await self.ask_model(views.tampering_task(self.post, closest.relationship, closest.evidence), schema,
                                      "tampering", attach=attach)
        value, _cuts = (answer.value, []) if answer.value is not None else fitted(answer, schema, schema)
        for finding in board.images:
            finding.tampering = f"not compared (the closest match is {closest.id})"
        if value is None:
            closest.tampering = f"unreadable after {answer.attempts} attempts"
            return [answer.error or "unreadable"]
        judged = value.model_dump()
        closest.tampering = str(judged["tampering_probability"])
        board.post_findings.append(
            f"[post image] tampering probability {judged['tampering_probability']} against {closest.id}: {str(judged['reason']).strip()}"
        )
        return [answer.error] if answer.error else []

    async def miscaption(self, finding: ImageFinding, vision: bool) -> str | None:
        """s_miscap (IR-2): the claim and the post image against the page's own text."""
        flow, config = self.flow, self.flow.config
        schema = miscaption_schema(config.text_chars)
        note = "" if vision else "You cannot see the image: judge from the claim and the page's text."
        if not vision and flow.prepared.images:
            flow.board.unavailable.setdefault("miscaption_image", "backend has no vision: the miscaption judge reads the page's "
                                        "text and the claim, without the image")
        task = views.miscaption_task(self.post, finding.evidence, config.miscaption_chars, note)
        answer = await self.ask_model(task, schema, "miscaption")
        value, cuts = (answer.value, []) if answer.value is not None else fitted(answer, loose_miscaption(), schema)
        if value is None:
            finding.miscaption_reason = f"unreadable after {answer.attempts} attempts"
            return answer.error
        judged = value.model_dump()
        finding.miscaption_rate = int(judged["miscaption_rate"])
        finding.miscaption_reason = str(judged["reason"]).strip() + ("" if vision else " (text only)")
        if cuts:
            flow.board.notes.append(f"miscaption {finding.id}: kept with fields cut to their bounds: {'; '.join(cuts)}")
        return answer.error

    def post_scores(self) -> None:
        """The deepfake score from the learned-detector slot (DIRE, paper line 241) and, when asked, the fused score."""
        flow, board, config = self.flow, self.flow.board, self.flow.config
        for number, image in enumerate(flow.prepared.images, start=1):
            if config.deepfake:
                try:
                    result = analyse_learned(image, flow.detector.model, flow.detector.positive_label)
                    flow.ctx.ledger.record_tool(DETECTOR, not result.informative)
                    if result.informative:
                        board.post_findings.append(f"[post image {number}] deepfake score {result.score:.2f} ({result.finding})")
                    else:
                        board.post_findings.append(f"[post image {number}] deepfake score {result.finding}")
                        flow.board.unavailable.setdefault("deepfake", f"the deepfake score (DIRE in the paper) is {result.finding}")
                except InputError as exc:
                    flow.ctx.ledger.record_tool(DETECTOR, True)
                    board.post_findings.append(f"[post image {number}] deepfake score unavailable: {exc.problem}")
                    flow.board.unavailable.setdefault("deepfake", f"the learned detector could not run: {exc.problem}")
            if config.forensics:
                try:
                    fused = fuse(list(run_forensics(image).values()))
                    board.post_findings.append(f"[post image {number}] fused forensic score {fused.score:.2f}: {fused.finding}")
                except InputError as exc:
                    board.post_findings.append(f"[post image {number}] forensic tools could not analyse it: {exc.problem}")


class Reasoner(Participant):
    """The screener (R-T) on a batch of new items, or the reasoner (R-A) on the whole useful pool."""

    async def act(self) -> tuple[str, str | None, str | None]:
        board, config = self.flow.board, self.flow.config
        batch: list[str] = []
        if self.role == "screener" and board.unscreened:
            batch = board.take_batch()
            items, task = [(d, board.er[d]) for d in batch], "screen"
        else:
            if not config.has("screener"):
                board.unscreened.clear()
            items, task = board.useful(), "reason"
        text_ids = tuple(d for d, _ in items)
        image_ids = tuple(board.image_ids())
        schema = judgement_schema(text_ids, image_ids, config.plan_steps, config.text_chars)
        answer = await self.ask_model(views.reason_task(board, self.post, task, items), schema)
        data, dropped, error = read_ids(answer, loose_judgement(), text_ids + image_ids)
        board.count_dropped(self.role, dropped)
        if data is None:
            if batch:
                board.screen(batch, None)
                board.errors.append(f"screener: unreadable after {answer.attempts} attempts ({error}); its batch joins unfiltered")
            board.record_judgement(None)
            return f"(no readable judgement after {answer.attempts} attempts)", None, error
        cited = list(dict.fromkeys(
            [i for step in data["steps"] for i in step["evidence_ids"] + step["image_ids"]] + data["direct_evidence_ids"]
        ))
        if batch:
            board.screen(batch, {c for c in cited if c in batch})
        judgement = Judgement(self.role, data["label"], int(data["sufficiency"]), cited, data)
        board.record_judgement(judgement)
        return render_judgement(data, batch, cited), judgement.label, answer.error


def render_judgement(data: dict[str, Any], batch: list[str], cited: list[str]) -> str:
    lines = [f"Claim: {data.get('claim_understanding', '')}".strip()]
    for step in data.get("steps", []):
        ids = ", ".join(step.get("evidence_ids", []) + step.get("image_ids", [])) or step.get("note", "")
        lines.append(f"- {step.get('step', '')}: {step.get('analysis', '')} [{ids}]")
    if batch:
        lines.append(f"useful: {', '.join(c for c in cited if c in batch) or 'none'} of {', '.join(batch)}")
    lines.append(f"label {data['label']}, sufficiency {data['sufficiency']}/5")
    return "\n".join(lines)


class Explainer(Participant):
    async def act(self) -> tuple[str, str | None, str | None]:
        flow, board = self.flow, self.flow.board
        ids = tuple(d for d, _ in board.useful()) + tuple(board.image_ids())
        schema = explainer_schema(ids, flow.config.key_points, flow.config.text_chars)
        texts: list[str] = []
        answer = await self.ask_model(views.explain_task(board, self.post), schema, attempts=texts)
        data, dropped, error = read_ids(answer, loose_explanation(), ids)
        board.explanation_attempts = answer.attempts
        board.count_dropped(self.role, dropped)
        known = set(ids)
        for text in texts:
            cited = cited_in(text) or []
            board.citations_all += len(cited)
            board.citations_unknown += sum(1 for i in cited if i not in known)
        if data is None:
            board.explanation_error = error or "no answer"
            return f"(no readable explanation after {answer.attempts} attempts)", None, error
        board.explanation = data
        lines = [f"Label: {data['label_3class']} (confidence {data['confidence_level']}/5)", data["reasoning_logic"]]
        lines += [f"- {p['point']} [{', '.join(p['evidence_ids'])}]" for p in data["key_points"]]
        return "\n".join(lines), data["label_3class"], answer.error


def build_participants(flow: Workflow) -> list[Participant]:
    ctx, config = flow.ctx, flow.config
    makers: dict[Role, Callable[[], Participant]] = {
        "strategist": lambda: Strategist("strategist", flow, "plans the check: steps, sentences to verify, background to search"),
        "retriever": lambda: Retriever(
            "retriever", flow, "writes queries and retrieves evidence for them",
            ctx.searchers.get("web") or ctx.query_answerer,
        ),
        "visual_analyst": lambda: VisualAnalyst("visual_analyst", flow, "compares the post's image with the pages that show it"),
        "screener": lambda: Reasoner("screener", flow, "keeps the new evidence that bears on the claim"),
        "reasoner": lambda: Reasoner("reasoner", flow, "judges the claim on all the useful evidence"),
        "explainer": lambda: Explainer("explainer", flow, "writes the verdict and its key points"),
    }
    return [makers[seat.role]() for seat in config.seats]
