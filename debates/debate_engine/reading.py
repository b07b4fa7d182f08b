"""Reading a debate message: its label (or why none could be read), the confidence it states and
the queries it asks. Agents and people are read by the same code, so a person's turn counts
exactly as a model's would."""

from __future__ import annotations

import re
from dataclasses import dataclass
from dataclasses import field as Field

from m3d_agents.errors import ParseError
from m3d_agents.labels import Taxonomy
from m3d_agents.parsing import final_block, parse_label, parse_unit_score, strip_reasoning

_CONFIDENCE_LINE = re.compile(r"^\s*[*_]*confidence[*_]*\s*[:=].*$", re.IGNORECASE | re.MULTILINE)
_QUERY_LINE = re.compile(r"^\s*[*_-]*\s*QUERY\s*[:\-]\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)


@dataclass
class StanceReading:
    """What one message says: its label (or why none could be read), confidence and queries.

    ``action`` holds a tool-style answer such as a cascade agent's ``Finish[...]``, for protocols
    whose seats answer with actions instead of labels.
    """

    label: str | None
    confidence: float | None
    queries: list[str]
    error: str | None = None
    rendered: str | None = Field(default=None, repr=False)
    action: str | None = None


def stated_confidence(visible: str) -> float | None:
    """The last ``CONFIDENCE:`` line of a message's final block, on [0, 1]; None when absent or unreadable."""
    lines = _CONFIDENCE_LINE.findall(final_block(visible))
    if not lines:
        return None
    try:
        return parse_unit_score(lines[-1])
    except ParseError:
        return None


def read_message(text: str, taxonomy: Taxonomy, max_queries: int | None = 2) -> StanceReading:
    """The single reading of a debate message, used for agents and humans alike.

    Everything is read from the speaker's own words (quoted evidence it echoed is cut first): the
    label and confidence from the final block, queries from ``QUERY:`` lines of its own."""
    visible = strip_reasoning(text)
    queries = [q for q in _QUERY_LINE.findall(visible)][:max_queries]
    confidence = stated_confidence(visible)
    try:
        label: str | None = parse_label(_CONFIDENCE_LINE.sub("", visible), taxonomy)
        error = None
    except ParseError as exc:
        label, error = None, str(exc)
    return StanceReading(label=label, confidence=confidence, queries=queries, error=error)
