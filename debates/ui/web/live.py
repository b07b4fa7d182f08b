"""The live debate page: pick a configuration, a post and a backend, maybe take a seat, and watch it run.

A debate is created by the form and starts only when its page opens the websocket; it runs
through :func:`debates.ui.web.running.run_post`, with the run's evidence sources, like every other run path. Turns are sent as they
finish (``on_turn``), a person's seat is a :class:`~debates.debate_engine.human_input.QueueInput` that the
page fills, and the verdict arrives with its evidence cards, the forensic heat maps of the
post's images and the accounting. Closing or leaving the page closes the websocket, which
cancels the debate at once: no model keeps answering for a page nobody reads.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable, Literal
from urllib.parse import urlencode

from fastapi import APIRouter, Request, WebSocket, WebSocketDisconnect
from fastapi.responses import RedirectResponse, Response
from starlette.responses import HTMLResponse

from debates.debate_engine.human_input import QueueInput
from debates.strategy import StrategyConfig, check_person_seats
from debates.config_loader import available_configs, load_config
from debates.eval.run.saved_post import save_post_run, saved_run_name
from debates.ui.web.app_state import AppState, app_state
from debates.ui.web.errors import PageError
from debates.ui.web.forms import checked_form, text_field
from debates.ui.web.heatmaps import ImageForensics, analyse_images
from debates.ui.web.posts import Post, post_from_form
from debates.ui.web.running import run_post
from debates.ui.web.security import CSRF_COOKIE, same_origin
from m3d_agents.errors import BackendError, InputError
from m3d_agents.labels import get_taxonomy
from m3d_agents.media.images import PreparedSample, prepare_sample
from m3d_agents.redaction import redact_data
from m3d_agents.verdict import TranscriptTurn, Verdict

log = logging.getLogger("m3d.web")
router = APIRouter()

MAX_OPEN_DEBATES = 8
MAX_ARGUMENT_CHARS = 4000
FINISHED_KEPT_S = 3600.0

Phase = Literal["waiting", "running", "finished", "failed", "cancelled"]


def person_message(argument: str, label: str, confidence: int) -> str:
    """What a person's answer says to the seat's parser: the argument, then the answer lines agents end with."""
    parts = [argument.strip()] if argument.strip() else []
    if label:
        parts.append(f"FINAL ANSWER: {label}\nCONFIDENCE: {confidence / 100:.2f}")
    return "\n\n".join(parts)


@dataclass
class SeatOffer:
    name: str
    role: str
    stance: str | None


def seats_of(config: StrategyConfig) -> list[SeatOffer]:
    """The seats a person may take (every seat of a group-chat debate; other strategies have none)."""
    return [SeatOffer(s.name, s.role, s.stance) for s in config.person_seats()]


def configurations() -> dict[str, StrategyConfig]:
    loaded = {}
    for name in available_configs():
        try:
            loaded[name] = load_config(name)
        except InputError as exc:
            log.warning("configuration %s left off the page: %s", name, exc)
    return loaded


LIVE_RUNS = "live"
"""The folder under the first run root where finished live debates are saved, one run folder each."""


@dataclass
class LiveDebate:
    id: str
    config: StrategyConfig
    post: Post
    prepared: PreparedSample
    backend: str
    seat: str | None
    labels: list[str]
    answers_required: bool
    person_sees_images: bool = True
    """False for a seat its protocol keeps from the images (the judge of a judged debate): the page
    then hides them until the verdict, so the person decides from what the seat may see."""
    created: float = field(default_factory=time.monotonic)
    phase: Phase = "waiting"
    ended: float | None = None
    verdict: Verdict | None = None
    forensics: list[ImageForensics] = field(default_factory=list)
    task: asyncio.Task[None] | None = None

    def end(self, phase: Phase) -> None:
        if self.phase in ("waiting", "running"):
            self.phase = phase
            self.ended = time.monotonic()
        self.post.discard()


class LiveRegistry:
    """Debates by id; unopened and long-finished ones are dropped, so memory and uploads do not pile up."""

    def __init__(self) -> None:
        self.debates: dict[str, LiveDebate] = {}

    def sweep(self, unopened_s: float) -> None:
        now = time.monotonic()
        for key, debate in list(self.debates.items()):
            stale_unopened = debate.phase == "waiting" and now - debate.created > unopened_s
            stale_finished = debate.ended is not None and now - debate.ended > FINISHED_KEPT_S
            if stale_unopened or stale_finished:
                debate.end("cancelled")
                del self.debates[key]

    def add(self, debate: LiveDebate, unopened_s: float) -> None:
        self.sweep(unopened_s)
        if sum(d.phase in ("waiting", "running") for d in self.debates.values()) >= MAX_OPEN_DEBATES:
            debate.post.discard()
            raise PageError(429, f"{MAX_OPEN_DEBATES} debates are open already; finish or close one first.")
        self.debates[debate.id] = debate

    def get(self, debate_id: str) -> LiveDebate:
        debate = self.debates.get(debate_id)
        if debate is None:
            raise PageError(404, "There is no such debate on this server (it may have ended long ago); start a new one.")
        return debate

    async def close(self) -> None:
        for debate in self.debates.values():
            if debate.task is not None:
                debate.task.cancel()
            debate.end("cancelled")
        tasks = [d.task for d in self.debates.values() if d.task is not None]
        await asyncio.gather(*tasks, return_exceptions=True)


def registry(connection: Request | WebSocket) -> LiveRegistry:
    found: LiveRegistry = connection.app.state.live_debates
    return found


def _form_page(request: Request, state: AppState, problem: str | None = None, status: int = 200) -> HTMLResponse:
    configs = configurations()
    seats = {name: [s.__dict__ for s in seats_of(c)] for name, c in configs.items()}
    samples = {name: [(s.id, s.text[:90]) for s in found[:500]] for name, found in state.settings.datasets.items()}
    return state.pages.render(
        request, "live_form.html", status=status, configs=configs, seats_json=json.dumps(seats), samples=samples,
        descriptions_json=json.dumps({name: " ".join(c.description.split()) for name, c in configs.items()}),
        backends=state.settings.backends, default_backend=state.settings.default_backend,
        taxonomies=["binary", "m3d", "ooc", "factcheck", "amg"], problem=problem,
        max_upload_mb=state.settings.max_upload_bytes / 1e6,
    )


@router.get("/live")
async def live_form(request: Request) -> HTMLResponse:
    return _form_page(request, app_state(request))


@router.post("/live")
async def start_live(request: Request) -> Response:
    state = app_state(request)
    form = await checked_form(request, max_files=1)
    try:
        debate = await _new_debate(state, form)
    except PageError as exc:
        if exc.status in (400, 413):
            return _form_page(request, state, state.pages.redact(exc.message), status=exc.status)
        raise
    registry(request).add(debate, state.settings.unopened_debate_s)
    return RedirectResponse(f"/live/{debate.id}", status_code=303)


async def _new_debate(state: AppState, form: Any) -> LiveDebate:
    settings = state.settings
    name = text_field(form, "config", max_chars=100, required=True, label="configuration")
    if name not in available_configs():
        raise PageError(400, f"configuration: {name!r} is not one of {', '.join(available_configs())}")
    backend = text_field(form, "backend", max_chars=100) or settings.default_backend
    if backend not in settings.backends:
        raise PageError(400, f"backend: {backend!r} is not one of {', '.join(settings.backends)}")
    seat = text_field(form, "seat", max_chars=100) or None
    config = load_config(name)
    taken = None
    if seat is not None:
        try:
            check_person_seats(config, [seat], field="seat")
        except InputError as exc:
            raise PageError(400, str(exc)) from None
        taken = next(s for s in config.person_seats() if s.name == seat)
    post = await post_from_form(settings, form)
    try:
        prepared = await asyncio.to_thread(prepare_sample, post.sample, settings.limits)
        labels, required, sees_images = get_taxonomy(post.sample.taxonomy).labels, False, True
        if taken is not None:
            labels = get_taxonomy(config.seat_taxonomy(post.sample.taxonomy)).labels
            required, sees_images = taken.answers, taken.sees_images
    except (InputError, ValueError) as exc:
        post.discard()
        raise PageError(400, str(exc)) from None
    return LiveDebate(id=secrets.token_urlsafe(12), config=config, post=post, prepared=prepared, backend=backend,
                      seat=seat, labels=labels, answers_required=required, person_sees_images=sees_images)


@router.get("/live/{debate_id}")
async def live_page(request: Request, debate_id: str) -> HTMLResponse:
    state = app_state(request)
    debate = registry(request).get(debate_id)
    return state.pages.render(request, "live.html", debate=debate, sample=debate.post.sample,
                              seats=seats_of(debate.config))


@router.get("/live/{debate_id}/image/{index}")
async def live_image(request: Request, debate_id: str, index: int) -> Response:
    debate = registry(request).get(debate_id)
    if not 0 <= index < len(debate.prepared.images):
        raise PageError(404, "The post has no such image.")
    return Response(debate.prepared.images[index].png_bytes(), media_type="image/png",
                    headers={"cache-control": "private, max-age=600"})


@router.get("/live/{debate_id}/heatmap/{index}/{tool}.png")
async def live_heatmap(request: Request, debate_id: str, index: int, tool: str) -> Response:
    debate = registry(request).get(debate_id)
    found = next((f for f in debate.forensics if f.index == index), None)
    data = found.png(tool) if found is not None else None
    if data is None:
        raise PageError(404, "There is no such heat map (yet): they are made when the verdict is.")
    return Response(data, media_type="image/png", headers={"cache-control": "private, max-age=600"})


# --- the websocket ------------------------------------------------------------------------------


async def _refuse_socket(ws: WebSocket, code: int, reason: str) -> None:
    await ws.accept()
    await ws.send_json({"type": "failed", "text": reason})
    await ws.close(code=code)


@router.websocket("/live/{debate_id}/ws")
async def live_socket(ws: WebSocket, debate_id: str) -> None:
    state = app_state(ws)
    origin = ws.headers.get("origin")
    if origin is None or not same_origin(origin, ws.headers.get("host", "")):
        await ws.close(code=4403)
        return
    if not state.pages.signer.valid(ws.cookies.get(CSRF_COOKIE), ws.query_params.get("csrf")):
        await _refuse_socket(ws, 4403, "This page's form token is stale; reload the page.")
        return
    debate = registry(ws).debates.get(debate_id)
    if debate is None:
        await _refuse_socket(ws, 4404, "There is no such debate on this server; start a new one.")
        return
    if debate.phase != "waiting":
        why = {"running": "it is already open in another tab", "cancelled": "its page was closed, which cancels it"}
        await _refuse_socket(ws, 4409, f"This debate cannot be shown again: {why.get(debate.phase, 'it has ended')}. "
                                       "Start a new one.")
        return
    await ws.accept()
    debate.phase = "running"
    await LiveSession(state, debate, ws).serve()


class LiveSession:
    """One open page of one debate: a sender, the debate itself, and the person's answers as they come."""

    def __init__(self, state: AppState, debate: LiveDebate, ws: WebSocket) -> None:
        self.state = state
        self.debate = debate
        self.ws = ws
        self.outbox: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        self.person = QueueInput(asks_answer=True) if debate.seat else None

    async def serve(self) -> None:
        sender = asyncio.create_task(self._send_all())
        self.debate.task = asyncio.create_task(self._run())
        relay = asyncio.create_task(self._relay_prompts()) if self.person is not None else None
        try:
            await self._receive_all()
        finally:
            for task in (self.debate.task, relay, sender):
                if task is not None:
                    task.cancel()
            await asyncio.gather(*(t for t in (self.debate.task, relay, sender) if t is not None), return_exceptions=True)
            if self.debate.phase == "running":
                log.info("debate %s cancelled: its page was closed", self.debate.id)
            self.debate.end("cancelled")

    async def _send_all(self) -> None:
        while True:
            message = await self.outbox.get()
            await self.ws.send_json(redact_data(message, extra=self.state.pages.secrets))

    async def _receive_all(self) -> None:
        while True:
            try:
                raw = await self.ws.receive_text()
            except (WebSocketDisconnect, RuntimeError):
                return
            self._answer(raw)

    def _answer(self, raw: str) -> None:
        """A person's answer from the page, checked before it reaches the seat."""
        try:
            message = json.loads(raw)
            if not isinstance(message, dict) or message.get("type") != "answer":
                raise ValueError("not an answer")
        except ValueError:
            self.outbox.put_nowait({"type": "problem", "text": "The page sent something this server does not understand."})
            return
        if self.person is None:
            self.outbox.put_nowait({"type": "problem", "text": "You have no seat in this debate."})
            return
        label = str(message.get("label") or "")
        argument = str(message.get("argument") or "")
        try:
            confidence = int(message.get("confidence", 50))
        except (TypeError, ValueError):
            confidence = -1
        problem = None
        if label and label not in self.debate.labels:
            problem = f"label: {label!r} is not one of {', '.join(self.debate.labels)}"
        elif not label and self.debate.answers_required:
            problem = "label: your seat must answer; pick a label"
        elif not 0 <= confidence <= 100:
            problem = "confidence: give a number from 0 to 100"
        elif len(argument) > MAX_ARGUMENT_CHARS:
            problem = f"argument: {len(argument)} characters, over the limit of {MAX_ARGUMENT_CHARS}"
        elif not argument.strip() and not label:
            problem = "argument: write your argument (or pick a label)"
        if problem is not None:
            self.outbox.put_nowait({"type": "problem", "text": problem})
            return
        self.person.put(person_message(argument, label, confidence))
        self.outbox.put_nowait({"type": "sent"})

    async def _relay_prompts(self) -> None:
        assert self.person is not None
        while True:
            prompt = await self.person.prompts.get()
            self.outbox.put_nowait({"type": "your_turn", "prompt": prompt})

    async def _on_turn(self, turn: TranscriptTurn) -> None:
        html = self.state.pages.fragment("_turn.html", turn=turn, person=turn.speaker == self.debate.seat)
        await self.outbox.put({"type": "turn", "html": html})

    async def _run(self) -> None:
        debate, pages = self.debate, self.state.pages
        forensics = asyncio.create_task(asyncio.to_thread(analyse_images, debate.prepared.images))
        await self.outbox.put({"type": "status", "text": "The debate has started."})
        try:
            verdict = await self._debate()
        except (InputError, BackendError) as exc:
            failure = str(exc)
        except asyncio.CancelledError:
            forensics.cancel()
            raise
        except Exception as exc:  # noqa: BLE001 - a failed debate is reported on its page, never a traceback
            failure = f"{type(exc).__name__}: {exc}"
        else:
            try:
                debate.forensics = await forensics
            except Exception as exc:  # noqa: BLE001 - the verdict stands without heat maps
                log.warning("forensic heat maps failed for debate %s: %s", debate.id, pages.redact(exc))
            debate.verdict = verdict
            saved = await self._save(verdict)
            debate.end("finished")
            html = pages.fragment("_verdict.html", verdict=verdict, forensics=debate.forensics, debate_id=debate.id,
                                  person=debate.seat)
            await self.outbox.put({"type": "verdict", "html": html})
            if saved is not None:
                await self.outbox.put(saved)
            return
        forensics.cancel()
        debate.end("failed")
        log.warning("debate %s failed: %s", debate.id, pages.redact(failure))
        await self.outbox.put({"type": "failed", "text": f"The debate failed: {pages.redact(failure)}"})

    async def _save(self, verdict: Verdict) -> dict[str, str] | None:
        """The finished debate as a run folder under the first run root (``live/``), so the review page lists it;
        the post's images are copied in before the upload is discarded. None when the server has no run root."""
        roots = self.state.settings.run_roots
        if not roots:
            return None
        debate = self.debate
        name = saved_run_name(debate.config.name, verdict.sample_id)
        try:
            await asyncio.to_thread(save_post_run, roots[0], f"{LIVE_RUNS}/{name}", debate.config.name, debate.post.sample,
                                    verdict, debate.backend)
        except (InputError, OSError) as exc:
            log.warning("debate %s could not be saved for review: %s", debate.id, self.state.pages.redact(exc))
            return {"type": "saved", "text": "This debate could not be saved for review; the server's log says why."}
        return {"type": "saved", "text": f"Saved for review as {LIVE_RUNS}/{name}",
                "href": "/review/run?" + urlencode({"ref": f"0/{LIVE_RUNS}/{name}"})}

    async def _debate(self) -> Verdict:
        """The debate itself, on a pool of its own and with the run's evidence sources."""
        debate, settings = self.debate, self.state.settings
        seats: dict[str, Callable[..., Awaitable[str]]] = {debate.seat: self.person} if debate.seat and self.person else {}
        return await run_post(settings, debate.config, debate.post.sample, debate.backend, on_turn=self._on_turn,
                              human_seats=seats)
