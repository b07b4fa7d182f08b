"""The agent-turn format (think, then tool calls or an answer): every well-formed and malformed case."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field

from m3d_agents.errors import ParseError
from debates.strategies.factguard.turn_format import AgentTurn, ToolCall, parse_agent_turn


class Probe(BaseModel):
    model_config = ConfigDict(extra="forbid")
    query: str = Field(min_length=1)


class Scout(BaseModel):
    model_config = ConfigDict(extra="forbid")
    start_s: float
    end_s: float


TOOLS: dict[str, type[BaseModel]] = {"fact_probe": Probe, "clip_scout": Scout}

WELL_FORMED = [
    ("<think>clear enough</think><answer>fake</answer>", {}, None, "fake", []),
    ("<think>ok</think>\n<answer> Real </answer>", {}, None, "real", []),
    ("<think>yes/no style</think><answer>yes</answer>", {"answer_style": "yes_no"}, None, "fake", []),
    ("<think>yes/no style</think><answer>No</answer>", {"answer_style": "yes_no"}, None, "real", []),
    ('<think>check a date</think><tool_call>{"name": "fact_probe", "arguments": {"query": "flood 2020"}}</tool_call>',
     {}, [("fact_probe", {"query": "flood 2020"})], None, []),
    ('<think>two</think>\n<tool_call>{"name": "fact_probe", "arguments": {"query": "q"}}</tool_call>\n'
     '<tool_call>{"name": "clip_scout", "arguments": {"start_s": 3, "end_s": 6.5}}</tool_call>',
     {}, [("fact_probe", {"query": "q"}), ("clip_scout", {"start_s": 3.0, "end_s": 6.5})], None, []),
    ("<think>single quotes</think><tool_call>{'name': 'fact_probe', 'arguments': {'query': 'x'}}</tool_call>",
     {}, [("fact_probe", {"query": "x"})], None, []),
    # Tolerated at inference, listed as lenient (a strict reading refuses them).
    ("<answer>fake</answer>", {}, None, "fake", ["no <think> block"]),
    ("Sure! <think>t</think><answer>real</answer>", {}, None, "real", ["text outside the blocks"]),
    ("<answer>fake</answer><think>late</think>", {}, None, "fake", ["<think> does not come first"]),
]


@pytest.mark.parametrize("text, options, calls, answer, lenient", WELL_FORMED)
def test_well_formed_and_tolerated_turns(text: str, options: dict, calls, answer, lenient) -> None:  # type: ignore[no-untyped-def]
    turn = parse_agent_turn(text, TOOLS, **options)
    assert [(c.name, c.arguments) for c in turn.tool_calls] == (calls or [])
    assert turn.answer == answer and turn.lenient == lenient
    if lenient:
        with pytest.raises(ParseError):
            parse_agent_turn(text, TOOLS, strict=True, **options)
    else:
        assert parse_agent_turn(text, TOOLS, strict=True, **options) == turn


MALFORMED = [
    ('<think>t</think><tool_call>{"name": "fact_probe", "arguments": {"query": "q"}}</tool_call><answer>fake</answer>',
     {}, "both an <answer> and a <tool_call>"),
    ("<think>only thoughts</think>", {}, "neither"),
    ("", {}, "neither"),
    ('<think>t</think><tool_call>{"name": "reverse_search", "arguments": {}}</tool_call>', {}, "unknown tool"),
    ("<think>t</think><tool_call>{name: fact_probe</tool_call>", {}, "not a JSON object"),
    ('<think>t</think><tool_call>{"name": "clip_scout", "arguments": {"start_s": "soon"}}</tool_call>', {}, "arguments of clip_scout"),
    ('<think>t</think><tool_call>{"name": "fact_probe", "arguments": {"query": ""}}</tool_call>', {}, "arguments of fact_probe"),
    ('<think>t</think><tool_call>{"name": "fact_probe", "arguments": {"query": "q"}}</tool_call>', {"tools_open": False},
     "tools are closed"),
    ('<think>t</think>' + '<tool_call>{"name": "fact_probe", "arguments": {"query": "q"}}</tool_call>' * 4, {"max_calls": 3},
     "more than 3"),
    ("<think>t</think><answer>probably</answer>", {}, "is not one of fake, real"),
    ("<think>t</think><answer></answer>", {}, "is not one of"),
    ("<think>t</think><answer>fake</answer>", {"answer_style": "yes_no"}, "is not one of yes, no"),
]


@pytest.mark.parametrize("text, options, reason", MALFORMED)
def test_malformed_turns_raise_with_the_reason(text: str, options: dict, reason: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(ParseError) as error:
        parse_agent_turn(text, TOOLS, **options)
    assert reason in str(error.value)


def test_strictness_refuses_repeated_blocks() -> None:
    text = "<think>a</think><think>b</think><answer>fake</answer>"
    assert parse_agent_turn(text, TOOLS).lenient == ["more than one <think> block"]
    with pytest.raises(ParseError, match="more than one <think>"):
        parse_agent_turn(text, TOOLS, strict=True)
    with pytest.raises(ParseError, match="more than one <answer>"):
        parse_agent_turn("<think>a</think><answer>fake</answer><answer>real</answer>", TOOLS, strict=True)


plain = st.text(alphabet=st.characters(blacklist_characters="<>", blacklist_categories=("Cs", "Cc")), min_size=1, max_size=40)
stripped = plain.map(str.strip).filter(bool)
calls = st.one_of(
    stripped.map(lambda q: ToolCall(name="fact_probe", arguments={"query": q})),
    st.tuples(st.floats(0, 600, allow_nan=False), st.floats(0, 600, allow_nan=False)).map(
        lambda t: ToolCall(name="clip_scout", arguments={"start_s": t[0], "end_s": t[1]})
    ),
)
turns = st.one_of(
    st.builds(lambda t, c: AgentTurn(think=t, tool_calls=c), stripped, st.lists(calls, min_size=1, max_size=3)),
    st.builds(lambda t, a: AgentTurn(think=t, answer={"fake": "fake", "REAL": "real", "Fake": "fake"}[a], answer_text=a),
              stripped, st.sampled_from(["fake", "REAL", "Fake"])),
)


@given(turns)
def test_a_well_formed_turn_reads_back_to_itself(turn: AgentTurn) -> None:
    assert parse_agent_turn(turn.render(), TOOLS, strict=True, max_calls=3) == turn
