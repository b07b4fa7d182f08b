"""Run the loopback OpenAI-compatible stub as a process, for tests that drive ``m3d`` in a subprocess.

Every answer is a valid check answer (or, for a debate turn, a valid structured turn, or the text format's
answer lines where a turn is free text) whose label
and confidence depend only on the request text, so two runs over the same samples get the same answers whatever the order. A request for an
AgentFact agent (its prompt has a ``Task: agentfact/...`` line) gets a valid instance of the JSON
schema it carries, its enums (labels, evidence ids) chosen by the same digest. Posts whose
text contains ``FAIL-ME`` get HTTP 400, to exercise recorded failures. Prints the base URL on
its first line, then serves until killed.

    python -m tests.support.serve_stub [--delay SECONDS]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from typing import Any

from tests.support.openai_stub_server import StubOpenAIServer, completion_body
from tests.support.schema_stub import fill, schema_of


def answer(request: dict[str, Any], _n: int, delay: float) -> tuple[int, dict[str, Any], float]:
    text = json.dumps(request.get("messages", []), sort_keys=True)
    if "FAIL-ME" in text:
        return 400, {"error": {"message": "refused by the stub", "type": "invalid_request_error"}}, 0.0
    digest = hashlib.sha256(text.encode()).digest()
    schema = schema_of(request)
    if "Task: agentfact/" in text and schema is not None:
        body = fill(schema, digest, fill_arrays=True)
        return 200, completion_body(json.dumps(body)), delay
    label = "fake" if digest[0] % 2 else "real"
    confidence = round(0.5 + digest[1] / 510, 3)
    body: dict[str, Any] = {"rationale": f"stub answer {digest[:4].hex()}", "label": label, "confidence": confidence}
    if schema is None and "FINAL ANSWER: <one of:" in text:
        return 200, completion_body(f"stub argument {digest[:4].hex()}\nFINAL ANSWER: {label}\nCONFIDENCE: {confidence}"), delay
    if '\\"argument\\" holds your reasoning' in text:
        body = {"argument": f"stub argument {digest[:4].hex()}", "answer": label, "confidence": confidence}
    return 200, completion_body(json.dumps(body)), delay


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--delay", type=float, default=0.0)
    args = parser.parse_args()
    with StubOpenAIServer(lambda request, n: answer(request, n, args.delay)) as server:
        sys.stdout.write(server.base_url + "\n")
        sys.stdout.flush()
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main()
