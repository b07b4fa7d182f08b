"""Serving the application with uvicorn: on the command line, and on a socket a test already bound.

uvicorn's access log is off (a query string can carry the access token); the application logs
each request's method, path and status itself, and every line it logs is redacted.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import sys
from contextlib import contextmanager
from typing import Iterator

import uvicorn

from debates.ui.web.app import asgi_app
from m3d_agents.redaction import redact
from debates.ui.web.settings import WebSettings


def build_server(settings: WebSettings, port: int) -> uvicorn.Server:
    config = uvicorn.Config(
        asgi_app(settings), host=settings.host, port=port, access_log=False, log_config=None, log_level="warning",
        ws="websockets-sansio", lifespan="on", timeout_graceful_shutdown=5,
    )
    return uvicorn.Server(config)


def loopback_socket() -> socket.socket:
    """A socket bound to a free loopback port, handed to the server so no other process can take the port first."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


class OneLine(logging.Filter):
    """Every record as one redacted line: no traceback (an exception's text can hold a key), and no
    report of the cancellations that closing a page causes on purpose."""

    def __init__(self, secrets: tuple[str, ...] = ()) -> None:
        super().__init__()
        self.secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and isinstance(record.exc_info[1], asyncio.CancelledError):
            return False
        cause = f" ({type(record.exc_info[1]).__name__}: {record.exc_info[1]})" if record.exc_info and record.exc_info[1] else ""
        text = (record.getMessage() + cause).strip().splitlines()
        record.msg, record.args = redact(text[0] if text else "", extra=self.secrets), ()
        record.exc_info = record.exc_text = None
        return True


LOGGERS = ("m3d.web", "autogen_core", "autogen_agentchat", "uvicorn.error")


class StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time of each record (a test harness swaps it)."""

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = sys.stderr
        super().emit(record)


@contextmanager
def server_logging(secrets: tuple[str, ...] = (), level: int = logging.INFO) -> Iterator[None]:
    """While the server runs: the page's own lines, and AutoGen's and uvicorn's, each on one redacted
    line on stderr; afterwards the loggers are as they were (a test process goes on using them)."""
    handler = StderrHandler()
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s", "%H:%M:%S"))
    handler.addFilter(OneLine(secrets))
    saved = []
    for name in LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, logger.level, logger.propagate))
        logger.addHandler(handler)
        logger.setLevel(level if name == "m3d.web" else logging.WARNING)
        logger.propagate = False
    try:
        yield
    finally:
        for logger, old_level, old_propagate in saved:
            logger.removeHandler(handler)
            logger.setLevel(old_level)
            logger.propagate = old_propagate
