"""A loopback HTTP server for retrieval tests: saved real pages, canned API answers, and misbehaving routes."""

from __future__ import annotations

import gzip
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

from tests.support.paths import SHARED_DATA

BENCH = SHARED_DATA / "article-extraction-benchmark"
MR2_MERGE = SHARED_DATA / "mr2-sample" / "queries_dataset" / "merge"


class PageServer:
    """Serves ``/bench/<id>``, ``/mr2/<path>``, ``/redirect?to=[&status=307]``, ``/slow``, ``/big``, ``/image``,
    ``/api/<name>``, and any path ending in ``.jpg`` as a JPEG (the matched images a reverse image search names)."""

    def __init__(self) -> None:
        self.api_answers: dict[str, Any] = {}
        self.requests: list[dict[str, Any]] = []
        self.pages: dict[str, str] = {}
        self.images: dict[str, bytes] = {}
        """Path -> the bytes served for it; other ``.jpg`` paths get a small picture of their own (:func:`picture`)."""
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                server._handle(self, None)

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length", 0))
                server._handle(self, self.rfile.read(length))

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def __enter__(self) -> "PageServer":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def _send(self, handler: BaseHTTPRequestHandler, status: int, body: bytes, content_type: str, **headers: str) -> None:
        handler.send_response(status)
        handler.send_header("Content-Type", content_type)
        handler.send_header("Content-Length", str(len(body)))
        for key, value in headers.items():
            handler.send_header(key.replace("_", "-"), value)
        handler.end_headers()
        handler.wfile.write(body)

    def _handle(self, handler: BaseHTTPRequestHandler, body: bytes | None) -> None:
        parts = urlsplit(handler.path)
        path, query = parts.path, parse_qs(parts.query)
        self.requests.append({"path": path, "query": query, "headers": dict(handler.headers), "body": body})
        html = "text/html; charset=utf-8"
        if path.endswith(".jpg"):
            self._send(handler, 200, self.images.get(path) or picture(path), "image/jpeg")
        elif path.startswith("/bench/"):
            raw = gzip.decompress((BENCH / "html" / f"{path[7:]}.html.gz").read_bytes())
            self._send(handler, 200, raw, html)
        elif path.startswith("/mr2/"):
            self._send(handler, 200, (MR2_MERGE / path[5:]).read_bytes(), "text/html")
        elif path.startswith("/page/"):
            self._send(handler, 200, self.pages[path[6:]].encode(), html)
        elif path == "/redirect":
            status = int(query.get("status", ["302"])[0])
            self._send(handler, status, b"", html, Location=query["to"][0])
        elif path == "/image":
            self._send(handler, 200, b"\x89PNG\r\n\x1a\n", "image/png")
        elif path == "/big":
            self._send(handler, 200, b"<html><body>" + b"x" * 300_000 + b"</body></html>", html)
        elif path == "/big-unannounced":
            handler.send_response(200)
            handler.send_header("Content-Type", html)
            handler.end_headers()
            for _ in range(40):
                handler.wfile.write(b"y" * 10_000)
        elif path == "/slow":
            handler.send_response(200)
            handler.send_header("Content-Type", html)
            handler.send_header("Content-Length", "100")
            handler.end_headers()
            for _ in range(20):
                try:
                    handler.wfile.write(b"z")
                    handler.wfile.flush()
                except OSError:
                    return
                time.sleep(0.25)
        elif path.startswith("/api/"):
            self._send(handler, 200, json.dumps(self.api_answers[path[5:]]).encode(), "application/json")
        else:
            self._send(handler, 404, b"not found", "text/plain")


MATCHED_SIZE = (64, 48)
"""The size of the pictures served for matched-image paths, so a test can recognise them after a model client re-encodes them."""


def picture(path: str) -> bytes:
    """A small JPEG whose colour comes from ``path``: each matched image differs, and is the same on every run."""
    import hashlib
    import io

    from PIL import Image

    red, green, blue = hashlib.sha256(path.encode()).digest()[:3]
    buffer = io.BytesIO()
    Image.new("RGB", MATCHED_SIZE, (red, green, blue)).save(buffer, format="JPEG")
    return buffer.getvalue()
