"""``m3d config NAME`` lists every field of a configuration, in text for a terminal or a pipe and as JSON."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from typer.testing import CliRunner

from debates.cli.main import app
from debates.config_loader import load_config


def every_field(model: BaseModel, prefix: str = "") -> set[str]:
    """The dotted path of every field of ``model`` and of the models in it, walked here independently
    of the command's own walk, so a field the command forgot is missed here too only by accident."""
    paths: set[str] = set()
    for name in type(model).model_fields:
        path = f"{prefix}{name}"
        paths.add(path)
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            paths |= every_field(value, f"{path}.")
        elif isinstance(value, list):
            for index, item in enumerate(value):
                if isinstance(item, BaseModel):
                    paths |= every_field(item, f"{path}[{index}].")
    return paths


def invoke(*args: str) -> Any:
    result = CliRunner().invoke(app, ["config", *args])
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.parametrize("name", ["judged", "t2agent", "agentfact", "factguard"])
def test_json_lists_every_field_with_its_description(name: str) -> None:
    rows = json.loads(invoke(name, "--json").stdout)
    assert all(set(row) == {"name", "type", "default", "value", "description"} for row in rows)
    assert [row["name"] for row in rows if not row["description"].strip()] == []
    config = load_config(name)
    listed = {row["name"] for row in rows}
    nested_unset = {f"retrieval.{f}" for f in ("leakage.enabled", "fetch.max_bytes")} if config.retrieval is None else set()
    assert every_field(config) | nested_unset <= listed
    by_name = {row["name"]: row for row in rows}
    assert by_name["name"]["value"] == name and by_name["parse_retries"]["default"] == 2
    assert by_name["strategy"]["value"] == config.strategy


def test_values_are_this_configurations_and_defaults_the_models() -> None:
    rows = {row["name"]: row for row in json.loads(invoke("judged", "--json").stdout)}
    assert rows["seats[1].stance"]["value"] == "not_misinformation" and rows["seats[1].stance"]["default"] is None
    assert rows["seats[0].turn_policy.kind"] == {
        "name": "seats[0].turn_policy.kind", "type": '"single"', "default": "single", "value": "single",
        "description": "single: one call per turn",
    }
    assert rows["max_rounds"]["type"] == "int (>= 1, <= 20)"
    assert rows["seats[0].name"]["default"] == "(required)"


def test_text_reads_at_80_columns_in_a_pipe() -> None:
    out = invoke("agentm3d").stdout
    lines = out.splitlines()
    assert lines[0].startswith("agentm3d (strategy debate): AgentM3D")
    assert max(len(line) for line in lines) <= 80
    assert "seats[0].turn_policy.scoring = \"all\"" in out
    assert "seats[0].turn_policy.temperature = 0.8  (default null)" in out
    assert "    int (>= 1, <= 64). N, the candidates sampled per turn" in out
    assert "\x1b[" not in out, "no colour codes in a pipe"


def test_a_yaml_file_is_described_like_a_builtin_name(tmp_path: Path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\nstrategy: self-consistency\nn: 3\n")
    rows = {row["name"]: row for row in json.loads(invoke(str(path), "--json").stdout)}
    assert rows["n"]["value"] == 3 and rows["n"]["default"] == 9 and rows["name"]["value"] == "mine"


def test_without_a_name_it_lists_the_builtin_configurations() -> None:
    out = invoke().stdout
    assert any(line.startswith("judged ") and "debate:" in line for line in out.splitlines())
    assert max(len(line) for line in out.splitlines()) <= 80


def test_an_unknown_name_is_one_line() -> None:
    result = CliRunner().invoke(app, ["config", "nope"])
    assert result.exit_code == 2 and "no configuration 'nope'" in result.output
    assert len(result.output.strip().splitlines()) == 1
