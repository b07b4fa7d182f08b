"""Structured output: how a JSON schema is asked of each kind of server, the same for every transport."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from autogen_core.models import ModelInfo
from pydantic import BaseModel


def structured_create_args(model_info: ModelInfo, schema: type[BaseModel], strict: bool = True) -> dict[str, Any]:
    """Keyword arguments for ``create`` that make the answer valid JSON of ``schema`` by construction.

    vLLM and OpenAI take ``response_format`` of type ``json_schema``; llama.cpp's server only
    accepts a ``json_object`` with a ``schema`` key, which it turns into a grammar. Both are sent
    raw: AutoGen's ``json_output=<model>`` goes through the SDK's beta parser (CPU per call, a
    warning per reply), and ``json_output=True`` would replace the schema with a bare json_object.
    """
    if model_info.get("structured_output"):
        json_schema = {"name": schema.__name__, "schema": json_schema_of(schema), "strict": strict}
        return {"extra_create_args": {"response_format": {"type": "json_schema", "json_schema": json_schema}}}
    if model_info.get("json_output"):
        return {"extra_create_args": {"response_format": {"type": "json_object", "schema": json_schema_of(schema)}}}
    return {}


@lru_cache(maxsize=256)
def json_schema_of(schema: type[BaseModel]) -> dict[str, Any]:
    """pydantic rebuilds a schema on every call, at a cost near a model call's; every seat of every
    sample asks for the same few. The dict is shared: it is only ever serialised."""
    return schema.model_json_schema()
