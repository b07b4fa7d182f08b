"""Reading a submitted form: the form token first, then each field with its bound.

Every POST goes through :func:`checked_form`, so no handler can forget the CSRF check; fields are
read with :func:`text_field`, which names the field in its error.
"""

from __future__ import annotations

from starlette.datastructures import FormData, UploadFile
from starlette.formparsers import MultiPartException
from starlette.requests import Request

from debates.ui.web.app_state import app_state
from debates.ui.web.errors import PageError
from debates.ui.web.security import CSRF_COOKIE, same_origin

FORGED = "Refused: this form did not come from this server's own page (its form token is missing or stale). Reload the page and submit again."


async def checked_form(request: Request, max_files: int = 0) -> FormData:
    """The form, once its origin and token are proven to be this server's own page's."""
    origin = request.headers.get("origin")
    if origin is not None and origin != "null" and not same_origin(origin, request.headers.get("host", "")):
        raise PageError(403, "Refused: the form was sent from another site.")
    try:
        form = await request.form(max_files=max_files, max_fields=40, max_part_size=256 * 1024)
    except MultiPartException as exc:
        raise PageError(400, f"The form could not be read: {exc.message}") from None
    signer = app_state(request).pages.signer
    token = form.get("csrf")
    if not signer.valid(request.cookies.get(CSRF_COOKIE), token if isinstance(token, str) else None):
        raise PageError(403, FORGED)
    return form


def text_field(form: FormData, name: str, *, max_chars: int, required: bool = False, label: str | None = None) -> str:
    value = form.get(name)
    if isinstance(value, UploadFile):
        raise PageError(400, f"{label or name}: expected text, got a file")
    text = (value or "").strip()
    if required and not text:
        raise PageError(400, f"{label or name}: this field is required")
    if len(text) > max_chars:
        raise PageError(400, f"{label or name}: {len(text)} characters, over the limit of {max_chars}")
    return text


def int_field(form: FormData, name: str, *, low: int, high: int, label: str | None = None) -> int:
    raw = text_field(form, name, max_chars=12, required=True, label=label)
    try:
        value = int(raw)
    except ValueError:
        raise PageError(400, f"{label or name}: {raw!r} is not a whole number") from None
    if not low <= value <= high:
        raise PageError(400, f"{label or name}: {value} is outside {low} to {high}")
    return value
