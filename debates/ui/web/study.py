"""Study mode: the before/after user study of LLM-Consensus, on posts of a data set the server was started with.

For each post a person answers with a label and a confidence from 0 to 10 without help; then
sees the system's verdict and its explanation; then answers again. Every answer is one fsynced
JSONL row in the study's file under ``--study-dir``; the last page gives accuracy and mean
confidence before and after seeing the system.

Where the paper is silent: the system's verdict is computed while the person reads the post
(started when the post is shown, never shown before the first answer), so nobody waits long for
it; a post whose verdict fails still gets its second answer, with the failure shown and saved.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import HTMLResponse

from debates.eval.records import ResultsFile
from debates.config_loader import available_configs
from debates.ui.web.app_state import AppState, app_state
from debates.ui.web.errors import PageError
from debates.ui.web.forms import checked_form, int_field, text_field
from debates.ui.web.running import run_post
from m3d_agents.errors import BackendError, InputError
from m3d_agents.labels import get_taxonomy
from m3d_agents.media.images import load_image
from m3d_agents.safe_files import OwnedFolder, read_text_nofollow
from m3d_agents.safe_json import loads_bounded
from m3d_agents.sample import Sample
from m3d_agents.verdict import Verdict

log = logging.getLogger("m3d.web")
router = APIRouter()

MAX_POSTS = 50
_PARTICIPANT = re.compile(r"^[A-Za-z0-9 _.@-]*$")

Phase = Literal["before", "after"]


class StudyAnswer(BaseModel):
    """One row of a study file."""

    model_config = ConfigDict(extra="forbid")

    study: str
    participant: str
    post: int = Field(ge=0)
    sample_id: str
    phase: Phase
    label: str
    confidence: int = Field(ge=0, le=10)
    gold: str | None
    correct: bool | None
    system_label: str | None = None
    system_confidence: float | None = None
    system_error: str | None = None
    config: str
    backend: str
    answered_at: str


class StudySummary(BaseModel):
    posts: int
    answered_before: int
    answered_after: int
    accuracy_before: float | None
    accuracy_after: float | None
    confidence_before: float | None
    confidence_after: float | None
    changed: int
    agreed_with_system_before: int
    agreed_with_system_after: int


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def summarise_study(rows: list[StudyAnswer]) -> StudySummary:
    """Before/after accuracy (over posts with a gold label) and mean confidence on 0 to 10."""
    before = {r.post: r for r in rows if r.phase == "before"}
    after = {r.post: r for r in rows if r.phase == "after"}
    system = {r.post: r.system_label for r in rows if r.phase == "after"}

    def accuracy(answers: dict[int, StudyAnswer]) -> float | None:
        scored = [a.correct for a in answers.values() if a.correct is not None]
        return _mean([1.0 if c else 0.0 for c in scored])

    return StudySummary(
        posts=len(set(before) | set(after)),
        answered_before=len(before), answered_after=len(after),
        accuracy_before=accuracy(before), accuracy_after=accuracy(after),
        confidence_before=_mean([float(a.confidence) for a in before.values()]),
        confidence_after=_mean([float(a.confidence) for a in after.values()]),
        changed=sum(1 for p, a in after.items() if p in before and before[p].label != a.label),
        agreed_with_system_before=sum(1 for p, a in before.items() if system.get(p) == a.label),
        agreed_with_system_after=sum(1 for p, a in after.items() if system.get(p) == a.label),
    )


def read_study(path: Path) -> list[StudyAnswer]:
    """Every whole answer of a study file; a torn last line (a crash during an append) is left out."""
    if not os.path.lexists(path):
        return []
    answers = []
    lines = read_text_nofollow(path).split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            answers.append(StudyAnswer.model_validate(loads_bounded(line)))
        except ValueError as exc:
            if number >= len(lines) - 1:
                break
            raise InputError(f"{path.name}:{number}", f"not a study answer ({type(exc).__name__})") from None
    return answers


@dataclass
class StudySession:
    id: str
    participant: str
    dataset: str
    posts: list[Sample]
    config: str
    backend: str
    path: Path
    answers: dict[tuple[int, Phase], StudyAnswer] = field(default_factory=dict)
    verdicts: dict[int, asyncio.Task[Verdict]] = field(default_factory=dict)
    """The system's verdict per post, from when the post is shown until its second answer is saved."""
    touched: float = field(default_factory=time.monotonic)
    """When a request last used this session: one left idle past ``study_idle_s`` is dropped."""

    def post(self, index: int) -> Sample:
        if not 0 <= index < len(self.posts):
            raise PageError(404, f"This study has posts 1 to {len(self.posts)}.")
        return self.posts[index]

    def next_step(self) -> str:
        """Where the person should be: the first post not answered twice, or the summary."""
        for index in range(len(self.posts)):
            if (index, "before") not in self.answers:
                return f"/study/{self.id}/post/{index}"
            if (index, "after") not in self.answers:
                return f"/study/{self.id}/post/{index}/reveal"
        return f"/study/{self.id}/done"


    def drop(self) -> None:
        """Let go of what the session holds in memory (its verdicts, running or not); its answers are in its file."""
        for task in self.verdicts.values():
            task.cancel()
        self.verdicts.clear()


def minutes(seconds: float) -> str:
    return f"{seconds / 60:g} minutes"


class StudyRegistry:
    """Study sessions by id, bounded in number and dropped when idle, so a server that runs for weeks holds only the
    studies in progress (1,000 abandoned sessions once held 535 MB)."""

    def __init__(self, limit: int = 100, idle_s: float = 7200.0) -> None:
        self.sessions: dict[str, StudySession] = {}
        self.limit = limit
        self.idle_s = idle_s

    def sweep(self) -> None:
        now = time.monotonic()
        for key, session in list(self.sessions.items()):
            if now - session.touched > self.idle_s:
                log.info("study %s dropped after %s without a request; its answers are in %s", key, minutes(self.idle_s),
                         session.path.name)
                session.drop()
                del self.sessions[key]

    def add(self, session: StudySession) -> None:
        self.sweep()
        if len(self.sessions) >= self.limit:
            raise PageError(429, f"{self.limit} study sessions are open on this server already, the most it keeps; one is "
                                 f"dropped after {minutes(self.idle_s)} without activity. Try again later.")
        self.sessions[session.id] = session

    def get(self, study_id: str) -> StudySession:
        self.sweep()
        session = self.sessions.get(study_id)
        if session is None:
            raise PageError(404, f"There is no such study session on this server (a session is dropped after "
                                 f"{minutes(self.idle_s)} without activity; the answers given were saved). Start a new one.")
        session.touched = time.monotonic()
        return session

    async def close(self) -> None:
        tasks = [t for s in self.sessions.values() for t in s.verdicts.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def studies(connection: Request) -> StudyRegistry:
    found: StudyRegistry = connection.app.state.studies
    return found


async def _system_verdict(state: AppState, session: StudySession, sample: Sample) -> Verdict:
    return await run_post(state.settings, session.config, sample, session.backend)


def _verdict_task(state: AppState, session: StudySession, index: int) -> asyncio.Task[Verdict]:
    task = session.verdicts.get(index)
    if task is None:
        task = asyncio.create_task(_system_verdict(state, session, session.post(index)))
        session.verdicts[index] = task
    return task


@router.get("/study")
async def study_form(request: Request) -> HTMLResponse:
    state = app_state(request)
    return state.pages.render(request, "study_start.html", datasets={k: len(v) for k, v in state.settings.datasets.items()},
                              configs=available_configs(), backends=state.settings.backends,
                              default_backend=state.settings.default_backend, max_posts=MAX_POSTS,
                              idle=minutes(state.settings.study_idle_s), max_sessions=state.settings.max_study_sessions)


@router.post("/study")
async def start_study(request: Request) -> Response:
    state = app_state(request)
    form = await checked_form(request)
    participant = text_field(form, "participant", max_chars=80, label="participant")
    if not _PARTICIPANT.match(participant):
        raise PageError(400, "participant: use letters, digits, spaces and . _ @ - only")
    dataset = text_field(form, "dataset", max_chars=600, required=True, label="data set")
    samples = state.settings.datasets.get(dataset)
    if samples is None:
        raise PageError(400, "data set: this server was not started with that data set")
    count = int_field(form, "count", low=1, high=MAX_POSTS, label="number of posts")
    first = int_field(form, "first", low=1, high=max(1, len(samples)), label="first post")
    config = text_field(form, "config", max_chars=100, required=True, label="configuration")
    if config not in available_configs():
        raise PageError(400, f"configuration: {config!r} is not one of {', '.join(available_configs())}")
    backend = text_field(form, "backend", max_chars=100) or state.settings.default_backend
    if backend not in state.settings.backends:
        raise PageError(400, f"backend: {backend!r} is not one of {', '.join(state.settings.backends)}")
    posts = samples[first - 1 : first - 1 + count]
    study_id = secrets.token_urlsafe(9)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    OwnedFolder(state.settings.study_dir).create()
    session = StudySession(study_id, participant, dataset, posts, config, backend,
                           state.settings.study_dir / f"study-{stamp}-{study_id}.jsonl")
    studies(request).add(session)
    log.info("study %s started: %d posts, answers in %s", study_id, len(posts), session.path.name)
    return RedirectResponse(session.next_step(), status_code=303)


def _expected(session: StudySession, here: str) -> Response | None:
    """A redirect when the person is not where the study is, so no step is skipped or answered twice."""
    step = session.next_step()
    return None if step == here else RedirectResponse(step, status_code=303)


@router.get("/study/{study_id}/post/{index}")
async def study_post(request: Request, study_id: str, index: int) -> Response:
    state = app_state(request)
    session = studies(request).get(study_id)
    sample = session.post(index)
    moved = _expected(session, f"/study/{study_id}/post/{index}")
    if moved is not None:
        return moved
    _verdict_task(state, session, index)
    return state.pages.render(request, "study_post.html", session=session, index=index, sample=sample,
                              labels=get_taxonomy(sample.taxonomy).labels, phase="before", verdict=None, first=None)


def _record(session: StudySession, index: int, phase: Phase, label: str, confidence: int, verdict: Verdict | None,
            system_error: str | None) -> StudyAnswer:
    sample = session.post(index)
    answer = StudyAnswer(
        study=session.id, participant=session.participant, post=index, sample_id=sample.id, phase=phase, label=label,
        confidence=confidence, gold=sample.gold_label, correct=None if sample.gold_label is None else label == sample.gold_label,
        system_label=verdict.label if verdict is not None and phase == "after" else None,
        system_confidence=verdict.confidence if verdict is not None and phase == "after" else None,
        system_error=system_error if phase == "after" else None,
        config=session.config, backend=session.backend, answered_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
    )
    log_file = ResultsFile(session.path)
    log_file.open()
    try:
        log_file.append(answer)
    finally:
        log_file.close()
    session.answers[(index, phase)] = answer
    return answer


async def _answer_fields(request: Request, sample: Sample) -> tuple[str, int]:
    form = await checked_form(request)
    label = text_field(form, "label", max_chars=100, required=True, label="label")
    labels = get_taxonomy(sample.taxonomy).labels
    if label not in labels:
        raise PageError(400, f"label: {label!r} is not one of {', '.join(labels)}")
    return label, int_field(form, "confidence", low=0, high=10, label="confidence")


@router.post("/study/{study_id}/post/{index}/before")
async def answer_before(request: Request, study_id: str, index: int) -> Response:
    session = studies(request).get(study_id)
    moved = _expected(session, f"/study/{study_id}/post/{index}")
    if moved is not None:
        return moved
    label, confidence = await _answer_fields(request, session.post(index))
    _record(session, index, "before", label, confidence, None, None)
    return RedirectResponse(f"/study/{study_id}/post/{index}/reveal", status_code=303)


async def _verdict_or_error(state: AppState, session: StudySession, index: int) -> tuple[Verdict | None, str | None]:
    try:
        return await _verdict_task(state, session, index), None
    except (InputError, BackendError) as exc:
        return None, state.pages.redact(exc)
    except Exception as exc:  # noqa: BLE001 - the study goes on; the failure is shown and saved
        log.warning("study %s: the system failed on post %d: %s", session.id, index, state.pages.redact(exc))
        return None, f"{type(exc).__name__}: {state.pages.redact(exc)}"


@router.get("/study/{study_id}/post/{index}/reveal")
async def study_reveal(request: Request, study_id: str, index: int) -> Response:
    state = app_state(request)
    session = studies(request).get(study_id)
    moved = _expected(session, f"/study/{study_id}/post/{index}/reveal")
    if moved is not None:
        return moved
    sample = session.post(index)
    verdict, error = await _verdict_or_error(state, session, index)
    return state.pages.render(request, "study_post.html", session=session, index=index, sample=sample,
                              labels=get_taxonomy(sample.taxonomy).labels, phase="after", verdict=verdict,
                              system_error=error, first=session.answers[(index, "before")])


@router.post("/study/{study_id}/post/{index}/after")
async def answer_after(request: Request, study_id: str, index: int) -> Response:
    state = app_state(request)
    session = studies(request).get(study_id)
    moved = _expected(session, f"/study/{study_id}/post/{index}/reveal")
    if moved is not None:
        return moved
    label, confidence = await _answer_fields(request, session.post(index))
    verdict, error = await _verdict_or_error(state, session, index)
    _record(session, index, "after", label, confidence, verdict, error)
    session.verdicts.pop(index, None)  # answered twice: the verdict is in the file, no page shows it again
    return RedirectResponse(session.next_step(), status_code=303)


@router.get("/study/{study_id}/done")
async def study_done(request: Request, study_id: str) -> Response:
    state = app_state(request)
    session = studies(request).get(study_id)
    moved = _expected(session, f"/study/{study_id}/done")
    if moved is not None:
        return moved
    summary = summarise_study(read_study(session.path))
    return state.pages.render(request, "study_done.html", session=session, summary=summary, file=session.path.name)


@router.get("/study/{study_id}/image/{index}/{image}")
async def study_image(request: Request, study_id: str, index: int, image: int) -> Response:
    sample = studies(request).get(study_id).post(index)
    if not 0 <= image < len(sample.images):
        raise PageError(404, "The post has no such image.")
    try:
        data = (await asyncio.to_thread(load_image, sample.images[image], app_state(request).settings.limits)).png_bytes()
    except InputError as exc:
        raise PageError(404, f"The post's image cannot be shown: {exc.problem}") from None
    return Response(data, media_type="image/png", headers={"cache-control": "private, max-age=600"})

