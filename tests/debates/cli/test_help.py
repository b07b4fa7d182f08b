"""The command line lists configurations from the registry, so a new one appears without further edits."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from debates.cli.main import app
from debates.config_loader import available_configs


@pytest.mark.parametrize("command", ["check", "debate", "evaluate"])
def test_help_lists_every_configuration(command: str) -> None:
    result = CliRunner().invoke(app, [command, "--help"], env={"COLUMNS": "400", "TERM": "dumb"})
    assert result.exit_code == 0
    flat = " ".join(result.output.split())
    for name in available_configs():
        assert name in flat, f"{name} missing from m3d {command} --help"


@pytest.mark.parametrize("command", ["check", "debate", "evaluate", "compare", "reproduce", "seats", "backends"])
def test_help_gives_every_option_a_line_and_no_flag_a_value_type(command: str) -> None:
    """Piped help is 80 columns wide: a flag shows no ``<bool>`` as if it took a value, and every option says what it does."""
    import typer

    from debates.cli.main import app as the_app

    result = CliRunner().invoke(the_app, [command, "--help"], env={"TERM": "dumb"})
    assert result.exit_code == 0
    assert "<bool>" not in result.output
    group = typer.main.get_command(the_app)
    for param in group.commands[command].params:  # type: ignore[attr-defined]
        if param.param_type_name == "option":
            assert param.help, f"m3d {command} {param.opts[0]} has no help"


def test_seats_lists_a_configurations_seats_and_says_how_to_take_one() -> None:
    result = CliRunner().invoke(app, ["seats", "judged"], env={"COLUMNS": "200", "TERM": "dumb"})
    assert result.exit_code == 0, result.output
    for seat in ("prosecutor", "defender", "judge"):
        assert seat in result.output
    assert "argues without answering; defends: misinformation; at most 2 turns" in result.output
    assert "m3d debate --config judged --human-seat prosecutor" in result.output
    refused = CliRunner().invoke(app, ["debate", "--config", "judged", "--human-seat", "debater", "--text", "x"])
    assert refused.exit_code == 2
    assert "its seats: prosecutor (debater), defender (debater), judge (judge) (m3d seats judged lists them)" in \
        " ".join(refused.output.split())
    assert "has no seats a person can take" in CliRunner().invoke(app, ["seats", "t2agent"]).output
