"""A loopback model that answers every request with JSON valid under the schema it was asked for.

The answer depends only on the request's messages (a hash picks each enum value and number), so
two runs over the same prompts get the same answers, and a response cache can be tested for real.
It serves any strategy or retrieval step that asks for structured output: debate turns, page
summaries, reliability judgements, the checker's answer.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Mapping, Sequence

from autogen_core.models import LLMMessage

from tests.support.openai_stub_server import StubOpenAIServer, completion_body


def _resolve(schema: dict[str, Any], root: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        node: Any = root
        for part in ref[2:].split("/"):
            node = node[part]
        return _resolve(dict(node), root)
    return schema


def fill(
    schema: dict[str, Any], digest: bytes, root: dict[str, Any] | None = None, depth: int = 0, fill_arrays: bool = False
) -> Any:
    """A value valid under ``schema`` (the subset pydantic emits), chosen by ``digest``.

    Arrays get their minimum number of items, or with ``fill_arrays`` one item where the schema allows
    one (so an answer cites an evidence id when its schema offers some)."""
    root = root if root is not None else schema
    schema = _resolve(schema, root)
    pick = digest[depth % len(digest)]
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][pick % len(schema["enum"])]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            options = [o for o in schema[key] if _resolve(o, root).get("type") != "null"] or schema[key]
            return fill(options[0], digest, root, depth + 1, fill_arrays)
    kind = schema.get("type")
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: fill(sub, digest, root, depth + i + 1, fill_arrays) for i, (name, sub) in enumerate(properties.items())}
    if kind == "array":
        count = int(schema.get("minItems", 0))
        if fill_arrays and schema.get("maxItems", 1) != 0:
            count = max(count, 1)
        return [fill(schema.get("items", {}), digest, root, depth + i + 1, fill_arrays) for i in range(count)]
    if kind == "boolean":
        return pick % 2 == 0
    if kind in ("number", "integer"):
        low, high = float(schema.get("minimum", 0.0)), float(schema.get("maximum", 1.0))
        value = low + (high - low) * (0.5 + (pick % 50) / 100)
        return int(value) if kind == "integer" else round(value, 3)
    text = f"Answer {digest[:4].hex()}: the post was read with the evidence shown."
    text = text[: int(schema.get("maxLength", len(text)))]
    return text.ljust(int(schema.get("minLength", 0)), ".")


def schema_of(request: dict[str, Any]) -> dict[str, Any] | None:
    fmt = request.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema") or fmt.get("schema")
    return schema if isinstance(schema, dict) else None


def answer(request: dict[str, Any], _n: int) -> tuple[int, dict[str, Any], float]:
    digest = hashlib.sha256(json.dumps(request.get("messages", []), sort_keys=True).encode()).digest()
    schema = schema_of(request)
    if schema is not None:
        return 200, completion_body(json.dumps(fill(schema, digest))), 0.0
    return 200, completion_body("The post was read with the evidence shown.\nSCORE: 0.5"), 0.0


def schema_responder(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
    """A :class:`~tests.support.scripted.ScriptedClient` responder: a valid answer to the schema each call
    carries (the client must report structured output), arrays filled where allowed."""
    from tests.support.scripted import text_of

    schema = schema_of(dict(kwargs))
    if schema is None:
        raise AssertionError("the call carried no schema; give the scripted client structured_output=True")
    return json.dumps(fill(schema, hashlib.sha256(text_of(messages).encode()).digest(), fill_arrays=True))


def schema_stub_server() -> StubOpenAIServer:
    """Start with ``with schema_stub_server() as server:``; ``server.requests`` lists what reached it."""
    return StubOpenAIServer(answer)
