"""FactGuard's turn format: think, then either tool calls or one answer, in tags.

It is FactGuard's own grammar (inference reads it, the format reward scores it), so it lives with
the strategy; the general parsers it builds on are in :mod:`m3d_agents.parsing`.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pydantic import BaseModel, ValidationError

from m3d_agents.errors import ParseError
from m3d_agents.fence import without_quoted
from m3d_agents.parsing import parse_json_object

_AGENT_BLOCK = re.compile(r"<(think|tool_call|answer)>(.*?)</\1>", re.IGNORECASE | re.DOTALL)
_OPEN_TAG = re.compile(r"</?(think|tool_call|answer)>", re.IGNORECASE)
ANSWER_STYLES = {
    "label": {"fake": "fake", "real": "real"},
    "yes_no": {"yes": "fake", "no": "real"},
}


class ToolCall(BaseModel):
    """One call an agent asks for: a known tool and arguments that passed its schema."""

    name: str
    arguments: dict[str, Any]

    def render(self) -> str:
        return f"<tool_call>{json.dumps({'name': self.name, 'arguments': self.arguments}, ensure_ascii=False)}</tool_call>"


class AgentTurn(BaseModel):
    """A parsed agent turn: the reasoning, then either tool calls or an answer (exactly one of them)."""

    think: str | None
    tool_calls: list[ToolCall] = []
    answer: str | None = None
    """The label the answer names (``fake``/``real``), whatever the answer style."""
    answer_text: str | None = None
    """The answer as written (``fake``, ``Real``, ``yes`` ...)."""
    lenient: list[str] = []
    """What a strict reading would have refused but inference tolerated (a missing ``<think>`` ...)."""

    @property
    def well_formed(self) -> bool:
        return not self.lenient

    def render(self) -> str:
        """The canonical text of this turn: parsing it gives this turn back."""
        parts = [f"<think>{self.think}</think>"] if self.think is not None else []
        parts += [call.render() for call in self.tool_calls]
        if self.answer_text is not None:
            parts.append(f"<answer>{self.answer_text}</answer>")
        return "\n".join(parts)


def _tool_call(body: str, tools: dict[str, type[BaseModel]], text: str) -> ToolCall:
    try:
        data = parse_json_object(body)
    except ParseError:
        raise ParseError("<tool_call>", f"not a JSON object: {body.strip()[:80]!r}", text) from None
    name = data.get("name")
    if not isinstance(name, str) or name not in tools:
        raise ParseError("<tool_call>", f"unknown tool {name!r}; tools: {', '.join(tools) or 'none'}", text)
    arguments = data.get("arguments", {})
    if not isinstance(arguments, dict):
        raise ParseError("<tool_call>", f"the arguments of {name} are not an object", text)
    model = tools[name]
    try:
        checked = model.model_validate(arguments)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ParseError("<tool_call>", f"arguments of {name}: {problems}", text) from exc
    return ToolCall(name=name, arguments=checked.model_dump(mode="json"))


def parse_agent_turn(
    text: str,
    tools: dict[str, type[BaseModel]],
    *,
    tools_open: bool = True,
    answer_style: str = "label",
    max_calls: int | None = None,
    strict: bool = False,
) -> AgentTurn:
    """Read ``<think>…</think>`` then either ``<tool_call>{json}</tool_call>``s or one ``<answer>…</answer>``.

    ``tools`` maps each known tool to the pydantic model of its arguments. Malformed turns raise
    :class:`ParseError`: both an answer and a tool call, neither, an unknown tool, bad JSON,
    arguments that fail the schema, a tool call when ``tools_open`` is False (the last allowed
    turn), more calls than ``max_calls``. ``strict`` (the format reward) also refuses a missing,
    repeated or late ``<think>``, a repeated ``<answer>`` and text outside the blocks; otherwise
    these are tolerated and listed in ``AgentTurn.lenient``.
    """
    if answer_style not in ANSWER_STYLES:
        raise ValueError(f"unknown answer style {answer_style!r}")
    # Tool output the agent echoes (a page with a <tool_call> or an <answer> in it) is fenced: cut it first.
    own = without_quoted(text)
    blocks = [(m.group(1).lower(), m.group(2), m.start()) for m in _AGENT_BLOCK.finditer(own)]
    lenient: list[str] = []
    outside = _AGENT_BLOCK.sub("", own)
    if _OPEN_TAG.search(outside):
        lenient.append("an unclosed or stray tag")
    if outside.strip():
        lenient.append("text outside the blocks")
    thinks = [b for b in blocks if b[0] == "think"]
    if not thinks:
        lenient.append("no <think> block")
    elif len(thinks) > 1:
        lenient.append("more than one <think> block")
    elif blocks[0][0] != "think":
        lenient.append("<think> does not come first")
    answers = [b[1].strip() for b in blocks if b[0] == "answer"]
    bodies = [b[1] for b in blocks if b[0] == "tool_call"]
    if answers and bodies:
        raise ParseError("agent turn", "both an <answer> and a <tool_call>; give one or the other", text)
    if not answers and not bodies:
        raise ParseError("agent turn", "neither an <answer> nor a <tool_call>", text)
    think = thinks[0][1].strip() if thinks else None
    if bodies:
        if not tools_open:
            raise ParseError("agent turn", "a <tool_call> on the last turn, where tools are closed; give the <answer>", text)
        if max_calls is not None and len(bodies) > max_calls:
            raise ParseError("agent turn", f"{len(bodies)} tool calls in one turn, more than {max_calls}", text)
        turn = AgentTurn(think=think, tool_calls=[_tool_call(b, tools, text) for b in bodies], lenient=lenient)
    else:
        if len(answers) > 1:
            lenient.append("more than one <answer> block")
        written = answers[-1]
        key = written.strip().strip("*_\"'`.").lower()
        mapping = ANSWER_STYLES[answer_style]
        if key not in mapping:
            raise ParseError("<answer>", f"{written[:40]!r} is not one of {', '.join(mapping)}", text)
        turn = AgentTurn(think=think, answer=mapping[key], answer_text=written, lenient=lenient)
    if strict and turn.lenient:
        raise ParseError("agent turn", "; ".join(turn.lenient), text)
    return turn
