"""Debate turns as schema-constrained JSON, for backends that can enforce a schema.

A free-text turn from a small model often lacks a readable answer line and costs retries; a turn
decoded under a JSON schema carries a valid label by construction. The JSON is rendered back into
the same prose format a person would write, so every reader of the transcript (other seats, the
parser, the human) sees one format.
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, create_model

import prompts
from debates.debate_engine.reading import StanceReading
from m3d_agents.fence import one_line
from m3d_agents.labels import Taxonomy
from m3d_agents.parsing import parse_model_setting_aside_confidence


@lru_cache(maxsize=None)
def turn_schema(labels: tuple[str, ...], with_queries: bool, max_queries: int | None = 2) -> type[BaseModel]:
    """The JSON turn; ``queries`` (when asked for) holds at most ``max_queries`` items, the same
    limit the prompt states and the reader applies (``max_queries_per_turn``)."""
    # No length bound on the argument: LLM-Consensus asks for explanations "in detail", the backend's
    # max_tokens already bounds an answer, and llama.cpp turns a maxLength into one nested rule per
    # character, which its grammar parser rejects beyond about a thousand (the server then fails).
    fields: dict[str, object] = {"argument": (str, Field(...))}
    if with_queries:
        fields["queries"] = (list[str], Field(default_factory=list, max_length=max_queries))
    fields["answer"] = (Literal[labels], ...)
    fields["confidence"] = (float, Field(..., ge=0.0, le=1.0))
    return create_model("DebateTurn", __config__=ConfigDict(extra="forbid"), **fields)  # type: ignore[call-overload]


def instruction(taxonomy: Taxonomy, with_queries: bool, max_queries: int | None = 2) -> str:
    most = "" if max_queries is None else f" at most {max_queries}"
    hint = f' "queries" lists{most} search queries (or none),' if with_queries else ""
    return prompts.render("debate/structured_turn", labels=", ".join(taxonomy.labels), queries_hint=hint)


def read_structured(text: str, schema: type[BaseModel], taxonomy: Taxonomy, max_queries: int | None) -> StanceReading:
    """Validate the JSON turn and return its reading, with the prose rendering attached.

    The reading comes from the JSON's own fields (``answer``, ``confidence``, ``queries``), never from
    the argument's text, which may quote a page's ``FINAL ANSWER:`` or ``QUERY:`` lines: those are
    shown in the rendering as the argument's words, not read. The label must be valid; a confidence
    outside [0, 1] is dropped rather than failing the turn (see
    :func:`~m3d_agents.parsing.parse_model_setting_aside_confidence`).
    """
    turn, confidence = parse_model_setting_aside_confidence(text, schema)
    data = turn.model_dump()
    queries = [one_line(str(q)) for q in data.get("queries", [])[:max_queries] if str(q).strip()]
    lines = [_as_quoted_words(str(data["argument"]).strip())]
    lines += [f"QUERY: {q}" for q in queries]
    lines.append(f"FINAL ANSWER: {data['answer']}")
    if confidence is not None:
        lines.append(f"CONFIDENCE: {confidence}")
    rendered = "\n".join(lines)
    return StanceReading(label=taxonomy.normalise(str(data["answer"])), confidence=confidence, queries=queries,
                         rendered=rendered)


_MARKER_LINE = re.compile(r"^(\s*[*_-]*\s*)(FINAL\s+ANSWER|QUERY|CONFIDENCE)(\s*[:=\-])", re.IGNORECASE | re.MULTILINE)


def _as_quoted_words(argument: str) -> str:
    """The argument with any line that looks like an answer, query or confidence line marked as part of
    the prose, so that a reader of the rendered turn (a person, a later re-reading) never takes it for one."""
    return _MARKER_LINE.sub(lambda m: f"{m.group(1)}(quoted) {m.group(2)}{m.group(3)}", argument)
