"""A request the page refuses or cannot serve, with the one sentence the person reads."""

from __future__ import annotations


class PageError(Exception):
    """Shown as an error page (or a websocket message) with ``status``; ``message`` is for people."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
