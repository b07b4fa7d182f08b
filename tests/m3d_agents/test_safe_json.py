"""JSON from outside is read with its nesting bounded, however many brackets its strings hold."""

from __future__ import annotations

import json

import pytest

from m3d_agents.safe_json import MAX_DEPTH, JsonTooDeep, loads_bounded


@pytest.mark.parametrize("kind", [str, bytes])
def test_nesting_past_the_bound_is_refused_at_the_bound_it_is_read(kind: type) -> None:
    at_bound = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    past = "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1)
    encode = (lambda t: t.encode()) if kind is bytes else (lambda t: t)
    assert loads_bounded(encode(at_bound)) == json.loads(at_bound)
    with pytest.raises(JsonTooDeep):
        loads_bounded(encode(past))
    with pytest.raises(JsonTooDeep):
        loads_bounded(encode("[" * 100_000 + "]" * 100_000))


def test_brackets_inside_strings_are_no_nesting() -> None:
    text = json.dumps({"answer": "[{" * MAX_DEPTH, "items": [[1], {"a": [2]}]})
    assert loads_bounded(text)["items"] == [[1], {"a": [2]}]
    assert loads_bounded(text.encode(), limit=4)["answer"].startswith("[{")
    with pytest.raises(JsonTooDeep):
        loads_bounded(text, limit=3)
