"""A loopback OpenAI-compatible server that misbehaves on a seeded share of calls.

Each call either answers well or gets one fault, in equal shares: HTTP 500, HTTP 429 with
``Retry-After``, a hang past the client's timeout, a closed connection, a 200 whose body is not
JSON (a proxy's error page), or a 200 whose completion is unreadable text. Whether a call is hit
depends only on the seed, the request body and how many times that body was seen before, so a
rerun of the same requests meets the same faults whatever the order or concurrency, and a retry
draws afresh.

A good answer is valid JSON for the schema in the request's ``response_format`` (any schema: the
instance is built from it), or prose ending in ``FINAL ANSWER:`` and ``CONFIDENCE:`` lines when
no schema is sent. Labels are drawn from the request too, so seats disagree now and then and
debates go past their first round.

    python -m tests.support.fault_server [--seed N] [--rate 0.2] [--hang S]

prints its base URL on the first line and serves until killed; ``GET /stats`` gives the counts.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.support.openai_stub_server import completion_body

FAULTS = ("http_500", "http_429", "hang", "close", "not_json", "garbage")


def instance_of(schema: dict[str, Any], rng: random.Random, defs: dict[str, Any] | None = None) -> Any:
    """A value valid for ``schema`` (the subset of JSON Schema that pydantic writes), chosen with ``rng``."""
    defs = defs if defs is not None else schema.get("$defs", {})
    if "$ref" in schema:
        return instance_of(defs[schema["$ref"].rsplit("/", 1)[-1]], rng, defs)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return rng.choice(schema["enum"])
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [o for o in schema[key] if o.get("type") != "null"] or schema[key]
            return instance_of(options[0], rng, defs)
    if "allOf" in schema:
        return instance_of(schema["allOf"][0], rng, defs)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: instance_of(sub, rng, defs) for name, sub in properties.items()}
    if kind == "array":
        count = max(int(schema.get("minItems", 1)), 1)
        count = min(count, int(schema.get("maxItems", count)))
        return [instance_of(schema.get("items", {"type": "string"}), rng, defs) for _ in range(count)]
    if kind in ("number", "integer"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        high = schema.get("maximum", schema.get("exclusiveMaximum", max(low, 1)))
        value = low + (high - low) * rng.uniform(0.55, 0.95)
        return int(round(value)) if kind == "integer" else round(value, 3)
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "null":
        return None
    text = "the post and its evidence point this way"
    low, high = int(schema.get("minLength", 0)), int(schema.get("maxLength", 400))
    return (text * (1 + low // len(text)))[: max(low, min(high, len(text)))]


_LABELS = re.compile(r"FINAL ANSWER: <one of: ([^>]+)>")


def prose_answer(request: dict[str, Any], rng: random.Random) -> str:
    text = json.dumps(request.get("messages", []))
    found = _LABELS.search(text.replace("\\n", "\n"))
    labels = [label.strip() for label in found.group(1).split(",")] if found else ["real", "fake"]
    return f"The caption and the image agree on what they show.\nFINAL ANSWER: {rng.choice(labels)}\nCONFIDENCE: {rng.uniform(0.55, 0.9):.2f}"


def schema_of(request: dict[str, Any]) -> dict[str, Any] | None:
    response_format = request.get("response_format") or {}
    if response_format.get("type") == "json_schema":
        return dict(response_format.get("json_schema", {}).get("schema") or {})
    if response_format.get("type") == "json_object" and response_format.get("schema"):
        return dict(response_format["schema"])
    return None


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gives up on a hung call resets its connection; that is the point, not an error."""


class FaultServer:
    """Serves on 127.0.0.1 in a thread; ``rate`` of the calls get a fault from ``faults``."""

    def __init__(self, seed: int = 0, rate: float = 0.2, hang_s: float = 4.0, faults: tuple[str, ...] = FAULTS) -> None:
        unknown = set(faults) - set(FAULTS)
        if unknown:
            raise ValueError(f"unknown faults {sorted(unknown)}; known: {', '.join(FAULTS)}")
        self.seed, self.rate, self.hang_s, self.faults = seed, rate, hang_s, faults
        self.stats: Counter[str] = Counter()
        self.authorization: list[str | None] = []
        """The ``Authorization`` header of every request, in order (None when there was none)."""
        self.refuse_with: tuple[int, str] | None = None
        """Answer every call with this HTTP status and error message instead (a wrong key, a bad request)."""
        self.echo_credentials = False
        """With ``refuse_with``: quote the request's Authorization header in the error, as some proxies do."""
        self._seen: Counter[str] = Counter()
        self._lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                outer.authorization.append(self.headers.get("Authorization"))
                if self.path.rstrip("/").endswith("/stats"):
                    with outer._lock:
                        self._send(200, dict(outer.stats))
                else:
                    self._send(200, {"object": "list", "data": [{"id": "fault-model", "object": "model"}]})

            def do_POST(self) -> None:
                outer.authorization.append(self.headers.get("Authorization"))
                raw = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                try:
                    request = json.loads(raw or b"{}")
                except ValueError:
                    self._send(400, {"error": {"message": "the request is not JSON"}})
                    return
                if outer.refuse_with is not None:
                    status, message = outer.refuse_with
                    if outer.echo_credentials:
                        sent = self.headers.get("Authorization") or ""
                        message += f": {sent.removeprefix('Bearer ')} (sent as Authorization: {sent})"
                    self._send(status, {"error": {"message": message, "type": "invalid_request_error"}})
                    return
                fault, rng = outer.draw(raw)
                if fault == "hang":
                    time.sleep(outer.hang_s)
                    self.close_connection = True
                    return
                if fault == "close":
                    self.close_connection = True
                    return
                if fault == "http_500":
                    self._send(500, {"error": {"message": "injected internal error"}})
                elif fault == "http_429":
                    self._send(429, {"error": {"message": "injected rate limit"}}, {"Retry-After": "1"})
                elif fault == "not_json":
                    self._send(200, b"<html><body>502 Bad Gateway (injected proxy page)</body></html>", {"Content-Type": "text/html"})
                elif fault == "garbage":
                    self._send(200, completion_body("~~ unreadable %%% text, no answer here ~~"))
                else:
                    schema = schema_of(request)
                    text = json.dumps(instance_of(schema, rng)) if schema is not None else prose_answer(request, rng)
                    self._send(200, completion_body(text))

            def _send(self, status: int, payload: dict[str, Any] | bytes, headers: dict[str, str] | None = None) -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._server = _QuietServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def draw(self, body: bytes) -> tuple[str | None, random.Random]:
        """The fault for this request (None: a good answer) and the generator for its answer."""
        digest = hashlib.sha256(body).hexdigest()
        with self._lock:
            attempt = self._seen[digest]
            self._seen[digest] += 1
        rng = random.Random(f"{self.seed}:{digest}:{attempt}")
        fault = rng.choice(self.faults) if rng.random() < self.rate else None
        with self._lock:
            self.stats["requests"] += 1
            self.stats[fault or "ok"] += 1
        return fault, random.Random(f"{self.seed}:{digest}")

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> "FaultServer":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--rate", type=float, default=0.2)
    parser.add_argument("--hang", type=float, default=4.0)
    args = parser.parse_args()
    with FaultServer(args.seed, args.rate, args.hang) as server:
        sys.stdout.write(server.base_url + "\n")
        sys.stdout.flush()
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main()
