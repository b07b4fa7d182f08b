"""A loopback OpenAI-compatible HTTP server for tests, answering from a script.

The responder gets each request's JSON body and its number (from 1) and returns either
``(status, body, delay_s)`` or a :class:`Reply` for what a tuple cannot say: headers, a content
type, a connection closed without an answer. A body given as bytes is sent as it is (to test
bodies that are not JSON). Everything received is kept: bodies, headers, arrival times, and the
headers of ``GET`` probes. ``GET`` answers a models list, or what ``get_responder`` returns for the path
(``/v1/models``, ``/metrics``, ...).
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Union


def completion_body(text: str, prompt_tokens: int = 12, completion_tokens: int = 7) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "test-model",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                  "total_tokens": prompt_tokens + completion_tokens},
    }


@dataclass
class Reply:
    status: int = 200
    body: dict[str, Any] | bytes = b""
    delay_s: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)
    content_type: str = "application/json"
    drop: bool = False
    """Close the connection without answering, as a crashed worker or a proxy's idle cut does."""


Responder = Callable[[dict[str, Any], int], Union[tuple[int, Union[dict[str, Any], bytes], float], Reply]]


class StubOpenAIServer:
    def __init__(self, responder: Responder, get_responder: Callable[[str], Reply] | None = None, port: int = 0) -> None:
        """``port``: where to listen (0: a free port); a test that starts a server where calls were refused names it."""
        self.requests: list[dict[str, Any]] = []
        self.raw: list[bytes] = []
        """Every request body as it arrived, byte for byte."""
        self.get_paths: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.times: list[float] = []
        self.probes: list[dict[str, str]] = []
        self._responder = responder
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                outer.probes.append(dict(self.headers.items()))
                outer.get_paths.append(self.path)
                if get_responder is not None:
                    self._send(get_responder(self.path))
                    return
                self._send(Reply(200, {"object": "list", "data": [{"id": "test-model", "object": "model"}]}))

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                raw = self.rfile.read(length)
                body = json.loads(raw or b"{}")
                with outer._lock:
                    outer.raw.append(raw)
                    outer.requests.append(body)
                    outer.headers.append(dict(self.headers.items()))
                    outer.times.append(time.monotonic())
                    number = len(outer.requests)
                reply = outer._responder(body, number)
                if not isinstance(reply, Reply):
                    status, payload, delay = reply
                    reply = Reply(status, payload, delay)
                if reply.delay_s:
                    time.sleep(reply.delay_s)
                if reply.drop:
                    self.close_connection = True
                    return
                self._send(reply)

            def _send(self, reply: Reply) -> None:
                payload = reply.body
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                headers = dict(reply.headers)
                if reply.status == 429:
                    headers.setdefault("Retry-After", "0")
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(data)))
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def authorization(self, index: int = -1) -> str | None:
        """The ``Authorization`` header of a chat request, whatever case the client spelled it in."""
        return next((v for k, v in self.headers[index].items() if k.lower() == "authorization"), None)

    def __enter__(self) -> "StubOpenAIServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
