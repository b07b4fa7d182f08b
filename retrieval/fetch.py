"""Asynchronous page fetching with httpx, behind the guards.

Redirects are followed by hand so that each hop is checked before it is requested; the body is
streamed so that a page over the byte limit is cut off instead of filling memory; one deadline
covers the whole fetch, so a server that drips its body slowly cannot hold a worker forever.
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from datetime import datetime, timezone
from typing import Any

import httpx
from pydantic import BaseModel, ConfigDict, Field

from m3d_agents.errors import BackendError
from m3d_agents.redaction import redact, redact_url
from retrieval.guards import FetchGuard, FetchRefused

REDIRECT_CODES = {301, 302, 303, 307, 308}
PAGE_TYPES = ("text/html", "application/xhtml+xml", "text/plain")
JSON_TYPES = ("application/json",)
IMAGE_TYPES = ("image/jpeg", "image/png", "image/webp", "image/gif", "image/bmp", "image/tiff")
DEFAULT_USER_AGENT = "m3d-agents/0.1 (evidence retrieval for fact-checking research)"


class FetchError(BackendError):
    """A fetch that was allowed but did not give a usable body (status, limits, timeout, network)."""

    def __init__(self, url: str, problem: str) -> None:
        self.url = redact_url(url)
        super().__init__(redact(f"fetching {self.url}: {problem}"))


CREDENTIAL_HEADER = re.compile(r"authorization|cookie|api[-_]?key|token|secret|password|session|auth", re.IGNORECASE)
"""Headers that carry a credential (``Authorization``, ``X-API-Key``, ``X-Goog-Api-Key`` ...): sent to
the origin they were given for, and dropped once a redirect leaves it."""


def origin_of(url: httpx.URL) -> tuple[str, str, int]:
    return url.scheme, url.host, url.port or (443 if url.scheme == "https" else 80)


def without_credentials(headers: dict[str, str]) -> dict[str, str]:
    return {name: value for name, value in headers.items() if not CREDENTIAL_HEADER.search(name)}


class FetchLimits(BaseModel):
    """How much of the web one page fetch may take."""

    model_config = ConfigDict(extra="forbid")

    max_bytes: int = Field(5_000_000, gt=0, description="the most bytes of one page's body read; a longer page is cut here")
    timeout_s: float = Field(20.0, gt=0, description="deadline for the whole fetch, redirects and body included")
    max_redirects: int = Field(5, ge=0, le=20, description="redirects followed, each checked like the first address")


class FetchedPage(BaseModel):
    url: str
    final_url: str
    status: int
    content_type: str
    text: str
    sha256: str
    retrieved_at: datetime


class FetchedImage(BaseModel):
    """An image's bytes as fetched (base64, so that the evidence store can keep it as JSON)."""

    url: str
    final_url: str
    content_type: str
    data_base64: str
    sha256: str
    retrieved_at: datetime

    def data(self) -> bytes:
        import base64

        return base64.b64decode(self.data_base64)


class _Body(BaseModel):
    url: str
    final_url: str
    status: int
    content_type: str
    body: bytes
    charset: str | None
    retrieved_at: datetime


_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_.:-]+)""", re.IGNORECASE)


def decode_body(body: bytes, declared: str | None = None) -> str:
    """Decode page bytes: the declared charset, then the page's own ``<meta charset>``, then a guess."""
    candidates = [declared] if declared else []
    match = _META_CHARSET.search(body[:4096])
    if match:
        candidates.append(match.group(1).decode("ascii", "ignore"))
    candidates.append("utf-8")
    for charset in candidates:
        try:
            return body.decode(charset)
        except (LookupError, UnicodeDecodeError):
            continue
    from charset_normalizer import from_bytes

    best = from_bytes(body).best()
    return str(best) if best is not None else body.decode("utf-8", errors="replace")


class Fetcher:
    """Fetches pages and API responses; every request goes through :class:`FetchGuard`."""

    def __init__(
        self,
        limits: FetchLimits | None = None,
        guard: FetchGuard | None = None,
        user_agent: str = DEFAULT_USER_AGENT,
        concurrency: int = 8,
    ) -> None:
        self.limits = limits or FetchLimits()
        self.guard = guard or FetchGuard()
        self.user_agent = user_agent
        self._client: httpx.AsyncClient | None = None
        self._semaphore = asyncio.Semaphore(concurrency)

    @property
    def client(self) -> httpx.AsyncClient:
        if self._client is None:
            self._client = httpx.AsyncClient(
                follow_redirects=False, trust_env=False, timeout=httpx.Timeout(self.limits.timeout_s)
            )
        return self._client

    async def close(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    async def get_page(self, url: str) -> FetchedPage:
        """An HTML or plain-text page."""
        return _page(await self._deadline(url, self._request("GET", url, accept=PAGE_TYPES)))

    async def get_image(self, url: str) -> FetchedImage:
        """An image file (JPEG, PNG, WebP, GIF, BMP, TIFF), its bytes as sent, under the same guards and limits."""
        import base64

        got = await self._deadline(url, self._request("GET", url, accept=IMAGE_TYPES))
        return FetchedImage(url=got.url, final_url=got.final_url, content_type=got.content_type,
                            data_base64=base64.b64encode(got.body).decode("ascii"),
                            sha256=hashlib.sha256(got.body).hexdigest(), retrieved_at=got.retrieved_at)

    async def get_json(self, url: str, params: dict[str, Any] | None = None, headers: dict[str, str] | None = None) -> Any:
        full = str(httpx.URL(url, params=params)) if params else url
        page = await self._deadline(url, self._request("GET", full, accept=JSON_TYPES, headers=headers))
        return _json(_page(page))

    async def post_json(self, url: str, payload: Any, headers: dict[str, str] | None = None) -> Any:
        page = await self._deadline(url, self._request("POST", url, accept=JSON_TYPES, headers=headers, payload=payload))
        return _json(_page(page))

    async def _deadline(self, url: str, work: Any) -> _Body:
        async with self._semaphore:
            try:
                return await asyncio.wait_for(work, timeout=self.limits.timeout_s)
            except asyncio.TimeoutError as exc:
                raise FetchError(url, f"no complete answer within {self.limits.timeout_s}s") from exc

    async def _request(
        self,
        method: str,
        url: str,
        *,
        accept: tuple[str, ...],
        headers: dict[str, str] | None = None,
        payload: Any = None,
    ) -> _Body:
        current = url
        given = dict(headers or {})
        origin: tuple[str, str, int] | None = None
        for _hop in range(self.limits.max_redirects + 1):
            target = self.guard.check_url(current)
            if origin is None:
                origin = origin_of(target)
            elif origin_of(target) != origin:
                # A key given for one host never follows a redirect to another (httpx's own
                # redirects strip only Authorization, not X-API-Key and its kin).
                given = without_credentials(given)
            address = await self.guard.resolve(target)
            request_headers = {
                "User-Agent": self.user_agent,
                "Accept": ", ".join(accept),
                "Accept-Encoding": "gzip, deflate",
                **given,
            }
            request_headers["Host"] = target.netloc.decode("ascii")
            extensions = {"sni_hostname": target.host} if target.scheme == "https" else {}
            pinned = target.copy_with(host=str(address))
            request = self.client.build_request(
                method, pinned, headers=request_headers, json=payload, extensions=extensions
            )
            try:
                response = await self.client.send(request, stream=True)
            except httpx.HTTPError as exc:
                raise FetchError(current, f"{type(exc).__name__}: {exc}") from exc
            try:
                if response.status_code in REDIRECT_CODES:
                    location = response.headers.get("location")
                    if not location:
                        raise FetchError(current, f"HTTP {response.status_code} without a Location header")
                    current = str(target.join(location))
                    if response.status_code == 303:
                        method, payload = "GET", None
                    continue
                return await self._read(url, current, response, accept)
            finally:
                await response.aclose()
        raise FetchError(url, f"more than {self.limits.max_redirects} redirects")

    async def _read(self, url: str, final_url: str, response: httpx.Response, accept: tuple[str, ...]) -> _Body:
        if response.status_code >= 400:
            raise FetchError(final_url, f"HTTP {response.status_code}")
        content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type not in accept:
            raise FetchError(final_url, f"content type {content_type or '(none)'!r} is not one of {', '.join(accept)}")
        declared_length = response.headers.get("content-length")
        if declared_length and declared_length.isdigit() and int(declared_length) > self.limits.max_bytes:
            raise FetchError(final_url, f"body of {declared_length} bytes is over the limit of {self.limits.max_bytes} bytes")
        chunks: list[bytes] = []
        size = 0
        try:
            async for chunk in response.aiter_raw():
                size += len(chunk)
                if size > self.limits.max_bytes:
                    raise FetchError(final_url, f"body is over the limit of {self.limits.max_bytes} bytes")
                chunks.append(chunk)
        except httpx.HTTPError as exc:
            raise FetchError(final_url, f"{type(exc).__name__} while reading the body: {exc}") from exc
        body = b"".join(chunks)
        encoding = response.headers.get("content-encoding", "").lower()
        if encoding in ("gzip", "deflate", "br", "zstd"):
            body = _decompress(final_url, body, encoding, self.limits.max_bytes)
        return _Body(url=url, final_url=final_url, status=response.status_code, content_type=content_type, body=body,
                     charset=response.charset_encoding, retrieved_at=datetime.now(timezone.utc))


def _page(got: _Body) -> FetchedPage:
    return FetchedPage(url=got.url, final_url=got.final_url, status=got.status, content_type=got.content_type,
                       text=decode_body(got.body, got.charset), sha256=hashlib.sha256(got.body).hexdigest(),
                       retrieved_at=got.retrieved_at)


def _decompress(url: str, body: bytes, encoding: str, limit: int) -> bytes:
    """Inflate with a size cap: a small compressed body can expand past any limit (a zip bomb)."""
    import zlib

    if encoding in ("gzip", "deflate"):
        wbits = 16 + zlib.MAX_WBITS if encoding == "gzip" else zlib.MAX_WBITS
        inflater = zlib.decompressobj(wbits)
        try:
            out = inflater.decompress(body, limit + 1)
        except zlib.error as exc:
            raise FetchError(url, f"corrupt {encoding} body: {exc}") from exc
        if len(out) > limit:
            raise FetchError(url, f"decompressed body is over the limit of {limit} bytes")
        return out
    raise FetchError(url, f"unsupported content encoding {encoding!r}")


def _json(page: FetchedPage) -> Any:
    import json

    try:
        return json.loads(page.text)
    except json.JSONDecodeError as exc:
        raise FetchError(page.final_url, f"the answer is not valid JSON: {exc}") from exc


__all__ = ["FetchError", "FetchGuard", "FetchLimits", "FetchRefused", "FetchedImage", "FetchedPage", "Fetcher", "decode_body",
           "redact_url"]
