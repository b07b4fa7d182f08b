"""Server-rendered pages: one Jinja2 environment, with autoescaping, for every page and fragment.

Model output, posts and notes are untrusted text; autoescaping everywhere (and a CSP that allows
no inline script or style) keeps them text. Fragments such as a turn or a verdict are rendered
here too, so the live page (which receives them over the websocket) and the review page show a
debate the same way.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup, escape
from pydantic import BaseModel
from starlette.requests import HTTPConnection
from starlette.responses import HTMLResponse

from debates.ui.web.security import CsrfSigner
from m3d_agents.redaction import redact

TEMPLATES = Path(__file__).parent / "templates"
STATIC = Path(__file__).parent / "static"

SECURITY_HEADERS = [
    (b"content-security-policy", b"default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; "
                                 b"connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
]


def _percent(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.0f}%"


def _fixed(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _pretty(value: Any) -> str:
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    return json.dumps(value, indent=2, sort_keys=True, default=str, ensure_ascii=False)


_SEPARATOR = re.compile(r"([/.:_?&=-]+)")


def _breakable(value: Any) -> Markup:
    """A path or an address that may wrap after its separators (``/``, ``.``, ``-`` ...) and nowhere else, so a
    narrow column wraps it without breaking a word inside; the text itself is escaped."""
    return Markup("").join(Markup("{}<wbr>").format(part) if _SEPARATOR.fullmatch(part) else escape(part)
                           for part in _SEPARATOR.split(str(value)))


def _facts(value: Any, prefix: str = "") -> list[tuple[str, str]]:
    """A nested mapping as rows of a table, one per leaf: ``("selection · planner", "level 1")``. A list of plain
    values is one row; a list of mappings gives a row per item (numbered); numbers keep at most four decimals.
    A model (a strategy's typed diagnostics) is read as its fields, the unset ones left out."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, dict):
        if not value:
            return [(prefix, "none")] if prefix else []
        rows: list[tuple[str, str]] = []
        for key, item in value.items():
            rows += _facts(item, f"{prefix} · {key}" if prefix else str(key))
        return rows
    if isinstance(value, list):
        if any(isinstance(item, (dict, list)) for item in value):
            return [row for i, item in enumerate(value, start=1) for row in _facts(item, f"{prefix} {i}")]
        return [(prefix, ", ".join(_fact(item) for item in value) or "none")]
    return [(prefix, _fact(value))]


def _fact(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "yes", False: "no", None: "none"}[value]
    if isinstance(value, float):
        return f"{value:.4f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))
    return str(value)


class Pages:
    """Renders templates with what every page needs: the form token and the redaction of secrets."""

    def __init__(self, signer: CsrfSigner, secrets: tuple[str, ...] = ()) -> None:
        self.signer = signer
        self.secrets = secrets
        self.env = Environment(
            loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(default=True, default_for_string=True),
            trim_blocks=True, lstrip_blocks=True,
        )
        self.env.filters.update(percent=_percent, fixed=_fixed, pretty=_pretty, facts=_facts, redact=self.redact,
                                breakable=_breakable)

    def redact(self, text: Any) -> str:
        return redact(str(text), extra=self.secrets)

    def csrf(self, connection: HTTPConnection) -> str:
        return self.signer.token_for(connection.scope.get("state", {}).get("csrf_cookie", ""))

    def fragment(self, name: str, **context: Any) -> str:
        """A piece of a page (a turn, a verdict) for the live page's socket, redacted whole like every page."""
        return self.redact(self.env.get_template(name).render(**context))

    def render(self, request: HTTPConnection, name: str, status: int = 200, **context: Any) -> HTMLResponse:
        # Every page is redacted whole on its way out: a model's words on a review page, a study's reveal or a live
        # verdict may repeat a key its server echoed, and no template has to remember to filter each field.
        html = self.redact(self.env.get_template(name).render(request=request, csrf=self.csrf(request), **context))
        return HTMLResponse(html, status_code=status, headers={"cache-control": "no-store"})

    def error(self, request: HTTPConnection, status: int, message: str) -> HTMLResponse:
        return self.render(request, "error.html", status=status, status_code=status, message=self.redact(message))

    def render_plain_error(self, status: int, message: str) -> HTMLResponse:
        """An error page for a request refused before any route saw it (no form token to give)."""
        html = self.env.get_template("error.html").render(request=None, csrf="", status_code=status, message=self.redact(message))
        return HTMLResponse(html, status_code=status, headers={"cache-control": "no-store"})
