"""A loopback OpenAI-compatible server whose answers are hostile in size or shape, for the answer limits.

Modes (set ``mode`` before a request): ``endless`` streams a chunked body that never closes until
the client goes away (``sent`` counts what was written); ``declared`` declares a huge
``Content-Length``; ``deep`` answers JSON nested two thousand levels; ``usage`` a completion
with a negative token count; ``content`` a completion whose message is an object, not text;
``body`` answers ``payload`` (a dict, sent as JSON) as it is; ``env`` takes the mode from the
``FLOOD_MODE`` environment variable at each request (for tests that drive the command line).
"""

from __future__ import annotations

import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FloodServer:
    def __init__(self) -> None:
        self.mode = "body"
        self.payload: dict[str, Any] = {}
        self.sent = 0
        self.limit = 256 * 1024 * 1024
        """Even an endless body stops here, so a client that reads everything still ends."""
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                mode = os.environ.get("FLOOD_MODE", "body") if outer.mode == "env" else outer.mode
                if mode == "endless":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    chunk = b'{"choices": "' + b"x" * 65536
                    try:
                        while outer.sent < outer.limit:
                            self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                            outer.sent += len(chunk)
                        self.wfile.write(b"0\r\n\r\n")
                    except OSError:
                        pass
                    self.close_connection = True
                    return
                if mode == "declared":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(10 * 1024 * 1024 * 1024))
                    self.end_headers()
                    try:
                        self.wfile.write(b"{")
                    except OSError:
                        pass
                    self.close_connection = True
                    return
                payload = outer.payload
                if mode in ("usage", "content"):
                    payload = {"choices": [{"index": 0, "finish_reason": "stop", "message": {
                        "role": "assistant", "content": {"not": "text"} if mode == "content" else "FINAL ANSWER: fake"}}],
                        "usage": {"prompt_tokens": -5 if mode == "usage" else 3, "completion_tokens": 2}}
                body = (b"[" * 2_000 + b"]" * 2_000) if mode == "deep" else json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> "FloodServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
