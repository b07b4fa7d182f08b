"""The web application behind ``m3d serve``: the live debate, review and study pages, and their guards.

Every error a person can meet is a page with one clear sentence (and its HTTP status), never a
traceback: routes raise :class:`PageError`, the project's InputError and BackendError are mapped
to pages, and anything unexpected is logged as one redacted line and shown as a short apology.
"""

from __future__ import annotations

import logging
import shutil
from contextlib import asynccontextmanager
from typing import AsyncIterator

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.staticfiles import StaticFiles
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import HTMLResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from debates.ui.web import live, review, study
from debates.ui.web.app_state import AppState, app_state
from debates.ui.web.errors import PageError
from debates.ui.web.gate import BodyTooLarge, Gate
from debates.ui.web.pages import STATIC, Pages
from debates.ui.web.security import CsrfSigner
from m3d_agents.redaction import redact
from debates.ui.web.settings import WebSettings
from m3d_agents.errors import BackendError, InputError

log = logging.getLogger("m3d.web")

_STATUS_TEXT = {
    404: "There is no such page here.",
    405: "This address does not take that kind of request.",
}


def create_app(settings: WebSettings) -> FastAPI:
    """The application for ``settings`` (checked first: another address than loopback needs a token)."""
    settings.check()
    signer = CsrfSigner()
    pages = Pages(signer, secrets=(settings.token,) if settings.token else ())
    live_debates = live.LiveRegistry()
    study_sessions = study.StudyRegistry(settings.max_study_sessions, settings.study_idle_s)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        await live_debates.close()
        await study_sessions.close()
        shutil.rmtree(settings.upload_dir, ignore_errors=True)

    app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.m3d = AppState(settings, pages)
    app.state.live_debates = live_debates
    app.state.studies = study_sessions
    app.mount("/static", StaticFiles(directory=STATIC), name="static")
    app.include_router(live.router)
    app.include_router(review.router)
    app.include_router(study.router)

    @app.get("/")
    async def index(request: Request) -> HTMLResponse:
        state = app_state(request)
        return state.pages.render(request, "index.html", roots=len(state.settings.run_roots),
                                  datasets=list(state.settings.datasets))

    @app.get("/favicon.ico", include_in_schema=False)
    async def favicon() -> Response:
        """Browsers ask for it whatever the page links; the same icon as the pages' own."""
        return Response((STATIC / "favicon.svg").read_bytes(), media_type="image/svg+xml",
                        headers={"cache-control": "public, max-age=86400"})

    @app.exception_handler(PageError)
    async def page_error(request: Request, exc: PageError) -> HTMLResponse:
        return pages.error(request, exc.status, exc.message)

    @app.exception_handler(InputError)
    async def input_error(request: Request, exc: InputError) -> HTMLResponse:
        return pages.error(request, 400, str(exc))

    @app.exception_handler(BackendError)
    async def backend_error(request: Request, exc: BackendError) -> HTMLResponse:
        return pages.error(request, 502, f"The model backend failed: {exc}")

    @app.exception_handler(BodyTooLarge)
    async def too_large(request: Request, exc: BodyTooLarge) -> HTMLResponse:
        return pages.error(request, 413, f"The upload is too large: uploads may be at most "
                                         f"{settings.max_upload_bytes / 1e6:.1f} MB. Choose a smaller image.")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> HTMLResponse:
        return pages.error(request, exc.status_code, _STATUS_TEXT.get(exc.status_code, str(exc.detail)))

    @app.exception_handler(RequestValidationError)
    async def bad_request(request: Request, exc: RequestValidationError) -> HTMLResponse:
        first = exc.errors()[0] if exc.errors() else {"loc": ("request",), "msg": "not understood"}
        where = ".".join(str(p) for p in first.get("loc", ())[1:]) or "request"
        return pages.error(request, 400, f"{where}: {first.get('msg', 'not understood')}")

    @app.exception_handler(Exception)
    async def unexpected(request: Request, exc: Exception) -> HTMLResponse:
        log.error("%s %s failed: %s: %s", request.method, request.url.path, type(exc).__name__,
                  redact(str(exc), extra=pages.secrets))
        return pages.render_plain_error(500, "Something went wrong on the server; the error was logged. "
                                             "Go back and try again.")

    app.add_middleware(Gate, settings=settings, pages=pages, signer=signer)
    return app


class Quiet:
    """The outermost layer: an exception that got past every handler was already answered with the
    error page; it is logged as one redacted line here instead of a traceback that could hold a secret."""

    def __init__(self, app: ASGIApp, secrets: tuple[str, ...] = ()) -> None:
        self.app = app
        self.secrets = secrets

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await self.app(scope, receive, send)
        except Exception as exc:  # noqa: BLE001 - see the class docstring
            log.error("request to %s ended with %s: %s", scope.get("path"), type(exc).__name__, redact(str(exc), extra=self.secrets))


def asgi_app(settings: WebSettings) -> ASGIApp:
    """What uvicorn serves."""
    return Quiet(create_app(settings), (settings.token,) if settings.token else ())
