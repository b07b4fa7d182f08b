"""The ASGI layer in front of every route: who may connect, how large a body may be, and what is logged.

It runs before any route, for pages and the websocket alike, so a route cannot be reached around
it. It also hands each browser its form-token cookie, adds the security headers, and writes one
access-log line per request with the path only (a query string can hold a token).
"""

from __future__ import annotations

import logging
from http.cookies import SimpleCookie
from typing import Any, Awaitable, Callable
from urllib.parse import parse_qsl, urlencode

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from debates.ui.web.pages import SECURITY_HEADERS, Pages
from debates.ui.web.security import CSRF_COOKIE, TOKEN_COOKIE, CsrfSigner, host_name, is_loopback, token_matches
from debates.ui.web.settings import WebSettings

log = logging.getLogger("m3d.web")

FORM_OVERHEAD = 256 * 1024
"""Room for a form's text fields and multipart framing on top of the largest upload."""


DRAIN_LIMIT = 200 * 1024 * 1024
"""Oversized bodies up to this size are read to the end and dropped, so the browser sees the refusal."""


class BodyTooLarge(Exception):
    """A request body grew past the limit while it was read (no or a false Content-Length)."""


def _cookies(headers: Headers) -> dict[str, str]:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(headers.get("cookie", ""))
    except Exception:  # noqa: BLE001 - a malformed cookie header is treated as no cookies
        return {}
    return {key: morsel.value for key, morsel in jar.items()}


class Gate:
    def __init__(self, app: ASGIApp, settings: WebSettings, pages: Pages, signer: CsrfSigner) -> None:
        self.app = app
        self.settings = settings
        self.pages = pages
        self.signer = signer
        self.max_body = settings.max_upload_bytes + FORM_OVERHEAD

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        cookies = _cookies(headers)
        path = scope.get("path", "")
        refusal = self._refusal(scope, headers, cookies)
        if refusal is not None:
            status, message = refusal
            log.info("%s %s refused %s", scope.get("method", "WS"), path, status)
            await self._refuse(scope, receive, send, status, message)
            return
        token = self.settings.token
        if token is not None and scope["type"] == "http":
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            if token_matches(query.get("token"), token):
                await self._swap_token_for_cookie(scope, send, query)
                return
        csrf_cookie = cookies.get(CSRF_COOKIE)
        new_cookie = None
        if not csrf_cookie:
            csrf_cookie = new_cookie = self.signer.new_cookie()
        scope.setdefault("state", {})["csrf_cookie"] = csrf_cookie
        if scope["type"] == "websocket":
            await self.app(scope, receive, send)
            return
        await self._http(scope, receive, send, new_cookie)

    def _refusal(self, scope: Scope, headers: Headers, cookies: dict[str, str]) -> tuple[int, str] | None:
        token = self.settings.token
        if token is None:
            if not is_loopback(host_name(headers.get("host", ""))):
                return 400, ("This server answers only to loopback addresses (127.0.0.1, localhost, ::1); "
                             "open it by one of those names.")
        else:
            bearer = headers.get("authorization", "")
            given = cookies.get(TOKEN_COOKIE) or (bearer[7:] if bearer.lower().startswith("bearer ") else None)
            query = dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))
            if not token_matches(given, token) and not (scope["type"] == "http" and token_matches(query.get("token"), token)):
                return 401, ("This server needs its access token. Open the address you were given with "
                             "?token=… once; the browser keeps it afterwards.")
        if scope["type"] == "http":
            length = headers.get("content-length")
            if length is not None and length.isdigit() and int(length) > self.max_body:
                return 413, self.too_large_message(int(length))
        return None

    def too_large_message(self, size: int | None = None) -> str:
        limit = self.settings.max_upload_bytes
        said = f"The upload is {size / 1e6:.1f} MB; " if size is not None else "The upload is too large; "
        return said + f"uploads may be at most {limit / 1e6:.1f} MB. Choose a smaller image."

    async def _refuse(self, scope: Scope, receive: Receive, send: Send, status: int, message: str) -> None:
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 4400 + (status % 100)})
            return
        if status == 413:
            await self._drain(receive)
        response = self.pages.render_plain_error(status, message)
        await response(scope, receive, self._with_headers(send, None))

    async def _drain(self, receive: Receive) -> None:
        """Read and drop an oversized body (up to a bound) before answering: a browser that is still
        sending when the server answers and closes shows a connection error instead of the answer."""
        dropped = 0
        while dropped <= DRAIN_LIMIT:
            message = await receive()
            if message["type"] != "http.request":
                return
            dropped += len(message.get("body", b""))
            if not message.get("more_body", False):
                return

    async def _swap_token_for_cookie(self, scope: Scope, send: Send, query: dict[str, str]) -> None:
        """Keep the token in an HttpOnly cookie and take it out of the address bar."""
        rest = urlencode({k: v for k, v in query.items() if k != "token"})
        location = scope.get("path", "/") + (f"?{rest}" if rest else "")
        cookie = f"{TOKEN_COOKIE}={self.settings.token}; HttpOnly; SameSite=Strict; Path=/"
        await send({"type": "http.response.start", "status": 303,
                    "headers": [(b"location", location.encode()), (b"set-cookie", cookie.encode()),
                                (b"cache-control", b"no-store"), *SECURITY_HEADERS]})
        await send({"type": "http.response.body", "body": b""})
        log.info("%s %s 303 (token kept in a cookie)", scope.get("method"), scope.get("path"))

    def _with_headers(self, send: Send, new_cookie: str | None) -> Callable[[Message], Awaitable[None]]:
        async def wrapped(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [h for h in message.get("headers", []) if h[0].lower() not in {k for k, _ in SECURITY_HEADERS}]
                headers += SECURITY_HEADERS
                if new_cookie:
                    headers.append((b"set-cookie", f"{CSRF_COOKIE}={new_cookie}; HttpOnly; SameSite=Strict; Path=/".encode()))
                message = {**message, "headers": headers}
            await send(message)

        return wrapped

    async def _http(self, scope: Scope, receive: Receive, send: Send, new_cookie: str | None) -> None:
        received = 0
        status: dict[str, Any] = {"code": None}

        async def counted() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body:
                    raise BodyTooLarge()
            return message

        headers_send = self._with_headers(send, new_cookie)

        async def logged(message: Message) -> None:
            if message["type"] == "http.response.start":
                status["code"] = message["status"]
            await headers_send(message)

        await self.app(scope, counted, logged)
        log.info("%s %s %s", scope.get("method"), scope.get("path"), status["code"])
