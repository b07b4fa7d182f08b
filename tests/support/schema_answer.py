"""A valid answer to any JSON schema a request carries, for stubs that must follow structured output.

Strings are short and within their bounds, arrays take one item where allowed, enums take the value
``pick`` chooses (the first by default), so an evidence-id enum yields an id that was shown.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Mapping, Sequence

from autogen_core.models import LLMMessage

Pick = Callable[[list[Any]], Any]


def first(values: list[Any]) -> Any:
    return values[0]


def instance(schema: Mapping[str, Any], pick: Pick = first, root: Mapping[str, Any] | None = None) -> Any:
    root = root if root is not None else schema
    if "$ref" in schema:
        name = str(schema["$ref"]).rsplit("/", 1)[-1]
        return instance(root["$defs"][name], pick, root)
    if "enum" in schema:
        return pick(list(schema["enum"]))
    if "const" in schema:
        return schema["const"]
    if "anyOf" in schema:
        options = [s for s in schema["anyOf"] if s.get("type") != "null"] or schema["anyOf"]
        return instance(options[0], pick, root)
    kind = schema.get("type")
    if kind == "object":
        return {name: instance(sub, pick, root) for name, sub in schema.get("properties", {}).items()}
    if kind == "array":
        count = max(int(schema.get("minItems", 0)), 1)
        if "maxItems" in schema:
            count = min(count, int(schema["maxItems"]))
        return [instance(schema.get("items", {"type": "string"}), pick, root) for _ in range(count)]
    if kind == "string":
        text = "stub answer"
        return text[: int(schema.get("maxLength", len(text)))].ljust(int(schema.get("minLength", 0)), ".")
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return float(schema.get("minimum", 0.5))
    if kind == "boolean":
        return True
    return None


def schema_of(request: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The JSON schema of a chat request's ``response_format`` (vLLM/OpenAI or llama.cpp style), if any."""
    response_format = request.get("response_format") or {}
    if "json_schema" in response_format:
        return dict(response_format["json_schema"].get("schema") or {})
    if "schema" in response_format:
        return dict(response_format["schema"])
    return None


def schema_responder(pick: Pick = first) -> Callable[[Sequence[LLMMessage], Mapping[str, Any]], str]:
    """A :class:`~tests.support.scripted.ScriptedClient` responder that answers every call with a valid
    instance of the schema it was sent (the client must report structured output)."""

    def respond(messages: Sequence[LLMMessage], kwargs: Mapping[str, Any]) -> str:
        schema = schema_of(kwargs)
        if schema is None:
            raise AssertionError("the call carried no schema; give the scripted client structured_output=True")
        return json.dumps(instance(schema, pick))

    return respond
