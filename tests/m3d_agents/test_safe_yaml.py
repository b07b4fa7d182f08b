"""YAML from users: aliases that expand past a small limit are refused while composing, in linear time."""

from __future__ import annotations

import tracemalloc

import pytest

from debates.config_loader import load_config
from m3d_agents.errors import InputError
from m3d_agents.safe_yaml import MAX_ALIAS_NODES, load_yaml


def laughs(levels: int) -> str:
    lines = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    lines += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]" for i in range(1, levels)]
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("levels", [5, 9, 30])
def test_alias_bombs_are_refused_before_they_expand(levels: int) -> None:
    tracemalloc.start()
    with pytest.raises(InputError, match="aliases expand to more than"):
        load_yaml(laughs(levels), "bomb.yaml")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 20_000_000, f"refusing the bomb used {peak} bytes"


def test_a_config_file_with_a_bomb_is_refused(tmp_path) -> None:  # type: ignore[no-untyped-def]
    path = tmp_path / "bomb.yaml"
    path.write_text("name: bomb\nprotocol: async\nseats: [{name: a}, {name: b}]\n" + laughs(12))
    with pytest.raises(InputError, match="aliases expand"):
        load_config(path)


def test_ordinary_aliases_still_work() -> None:
    data = load_yaml("base: &b {kind: vllm, temperature: 0.2}\nother: *b\nthird: *b\n", "ok.yaml")
    assert data["other"] == data["third"] == {"kind": "vllm", "temperature": 0.2}
    assert len(laughs(3)) and load_yaml(laughs(3), "small.yaml")["l2"][0][0][0] == "lol"
    assert MAX_ALIAS_NODES >= 1000


@pytest.mark.parametrize(
    "text, problem",
    [
        ("a: &a [1, *a]\n", "recursive alias"),
        ("[" * 3000, "nested too deeply"),
        ("!!python/object/apply:os.system ['echo pwned']\n", "could not determine a constructor"),
        ("a: [1\n", "not valid YAML"),
    ],
)
def test_other_hostile_yaml_is_refused_on_one_line(text: str, problem: str) -> None:
    with pytest.raises(InputError, match=problem) as info:
        load_yaml(text, "hostile.yaml")
    assert "\n" not in str(info.value)
