"""The AgentFact agents as group-chat participants: each reads the board, acts, writes its result to the
board, then replies with a readable account of what it did (what the transcript and the CLI show).

- the strategist plans (steps, sentences to check, background to search); a replan is shown the
  latest judgement and the queries already run;
- the retriever turns background needs into queries (one call per plan, shown the query history),
  then runs one query per turn through the run's web searcher (whose answers the run context has
  screened with the run's leakage and reliability settings) and adds new items to the retrieved
  pool under fresh ids;
- the visual analyst reads the reverse-image pages once per sample: the relationship from the
  provider's match kind, a text-only miscaption judgement per page, and the fused forensic score of
  the post image; comparing images needs a vision model and a downloaded match, and says so;
- the screener reads a batch of new items and keeps the ones it uses; the reasoner reads the whole
  useful pool; both answer with a judgement (label and sufficiency);
- the explainer writes the verdict with key points citing the ids it was shown.

Ids a model cites that it was not shown are rejected and asked again; once the retries are spent,
the valid ids of the last answer are kept and the others counted and removed, never invented.
"""

from __future__ import annotations

from abc import abstractmethod

import asyncio
from dataclasses import dataclass
from typing import Any, Callable, Sequence, TypeVar

from autogen_agentchat.agents import BaseChatAgent
from autogen_agentchat.base import Response
from autogen_agentchat.messages import BaseChatMessage, TextMessage
from autogen_core import CancellationToken
from autogen_core.models import SystemMessage, UserMessage
from pydantic import BaseModel

import prompts
from debates.strategies.agentfact import views
from debates.strategies.agentfact.board import Board, Judgement, Relationship
from debates.strategies.agentfact.schemas import (
    Plan,
    SentenceToCheck,
    explainer_schema,
    judgement_schema,
    loose_explanation,
    loose_judgement,
    miscaption_schema,
    plan_schema,
    query_schema,
)
from debates.strategies.agentfact.settings import AgentFactConfig, Role
from debates.strategy import RunContext
from m3d_agents.asking import Answer, ask
from m3d_agents.backends.factory import Backend
from m3d_agents.errors import InputError, ParseError
from m3d_agents.evidence import Evidence
from m3d_agents.media.images import PreparedSample
from m3d_agents.parsing import parse_model
from m3d_agents.sample import Sample
from m3d_agents.tools.forensics.fusion import fuse, run_forensics
from retrieval.interfaces import QueryAnswerer
from retrieval.pipeline import match_kind

M = TypeVar("M", bound=BaseModel)
NO_VISION = "unavailable: backend has no vision"
NO_MATCH_IMAGE = "unavailable: the matching image is not downloaded in this run"


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

    @property
    def post(self) -> str:
        return views.post(self.sample.text, self.sample.metadata.claim_date)


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

    async def ask_model(self, task: str, schema: type[M], call: str | None = None) -> Answer[M]:
        """One structured question to this seat's backend, metered under the seat and ``call``."""
        flow = self.flow
        backend = flow.backends[self.role]
        sampling: dict[str, Any] = {"seed": flow.ctx.seed_for("agentfact", self.role)}
        if flow.config.temperature is not None:
            sampling["temperature"] = flow.config.temperature
        if flow.config.max_tokens is not None:
            sampling["max_tokens"] = flow.config.max_tokens
        structured = backend.structured_args(schema)
        create = {"extra_create_args": {**structured.get("extra_create_args", {}), **sampling}}

        return await ask(
            backend.view(flow.ctx.ledger, agent=self.name, role=call or self.role),
            [SystemMessage(content=prompts.load("agentfact/system")), UserMessage(content=task, source="user")],
            lambda text: parse_model(text, schema),
            retries=flow.config.parse_retries, create_kwargs=create, on_retry=flow.ctx.ledger.count_parse_retry,
        )


class Strategist(Participant):
    async def act(self) -> tuple[str, str | None, str | None]:
        flow, board, config = self.flow, self.flow.board, self.flow.config
        schema = plan_schema(config.plan_steps, config.plan_items, config.text_chars)
        answer = await self.ask_model(views.strategist_task(board, flow.post), schema)
        note = ""
        if answer.value is None:
            board.apply_plan(Plan(validation_list=[SentenceToCheck(sentence=flow.sample.text, explanation="the post as a whole")]))
            board.errors.append(f"strategist: unreadable plan after {answer.attempts} attempts ({answer.error}); the post is searched as it is")
            note = "\n(the plan could not be read; the post itself is searched)"
        else:
            board.apply_plan(Plan.model_validate(answer.value.model_dump()))
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
        needs = board.pending_needs()
        if needs:
            error = await self.write_queries(needs)
        if not board.queue:
            return "The query writer left out every need of this plan (common knowledge).", None, error
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
        """One call turns every pending need of the plan into a query; unreadable, the needs are searched as written."""
        board = self.flow.board
        answer = await self.ask_model(views.queries_task(board, self.flow.post, needs), query_schema(len(needs), self.flow.config.text_chars), "query_writer")
        if answer.value is None:
            board.errors.append(f"retriever: unreadable queries after {answer.attempts} attempts ({answer.error}); needs searched as written")
            board.write_queries(needs, [n.text for n in needs])
        else:
            board.write_queries(needs, [str(q) for q in answer.value.model_dump()["queries"]])
        return answer.error


class VisualAnalyst(Participant):
    async def act(self) -> tuple[str, str | None, str | None]:
        flow, board, config = self.flow, self.flow.board, self.flow.config
        lines: list[str] = []
        error = None
        if flow.ctx.evidence_source is None:
            lines.append("No reverse image search is configured for this run.")
            found: list[Evidence] = []
        else:
            gathered = await flow.ctx.gather_evidence(flow.sample, dropped=True)
            found = [e for e in gathered if e.kind == "reverse_image"]
            board.record_leakage(found)
        for item in found:
            if item.kept and not item.url and item.text.strip():
                board.post_findings.append(f"[reverse image search] {item.text.strip()}")
        vision = flow.backends[self.role].vision
        for page in [e for e in found if e.kept and e.url][: config.reverse_pages]:
            relationship: Relationship = "same_source" if match_kind(page) in ("full", "partial") else "unknown"
            finding = board.add_image_finding(page, relationship, NO_MATCH_IMAGE if vision else NO_VISION)
            if config.miscaption:
                schema = miscaption_schema(config.text_chars)
                answer = await self.ask_model(views.miscaption_task(flow.post, page, config.evidence_chars), schema, "miscaption")
                if answer.value is not None:
                    judged = answer.value.model_dump()
                    finding.miscaption_rate = int(judged["miscaption_rate"])
                    finding.miscaption_reason = str(judged["reason"]).strip()
                else:
                    finding.miscaption_reason = f"unreadable after {answer.attempts} attempts"
                    error = answer.error
        if config.forensics:
            for number, image in enumerate(flow.prepared.images, start=1):
                try:
                    fused = fuse(list(run_forensics(image).values()))
                    board.post_findings.append(f"[post image {number}] fused forensic score {fused.score:.2f}: {fused.finding}")
                except InputError as exc:
                    board.post_findings.append(f"[post image {number}] forensic tools could not analyse it: {exc.problem}")
        lines += [f.line() for f in board.images] + board.post_findings
        if len(lines) == 0:
            lines.append("Reverse image search found no page to compare with.")
        return "\n".join(lines), None, error


class Reasoner(Participant):
    """The screener (R-T) on a batch of new items, or the reasoner (R-A) on the whole useful pool."""

    async def act(self) -> tuple[str, str | None, str | None]:
        flow, board, config = self.flow, self.flow.board, self.flow.config
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
        answer = await self.ask_model(views.reason_task(board, flow.post, task, items), schema)
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
        answer = await self.ask_model(views.explain_task(board, flow.post), schema)
        data, dropped, error = read_ids(answer, loose_explanation(), ids)
        board.explanation_attempts = answer.attempts
        board.count_dropped(self.role, dropped)
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
        "visual_analyst": lambda: VisualAnalyst("visual_analyst", flow, "reads the pages that show the post's image"),
        "screener": lambda: Reasoner("screener", flow, "keeps the new evidence that bears on the claim"),
        "reasoner": lambda: Reasoner("reasoner", flow, "judges the claim on all the useful evidence"),
        "explainer": lambda: Explainer("explainer", flow, "writes the verdict and its key points"),
    }
    return [makers[seat.role]() for seat in config.seats]

