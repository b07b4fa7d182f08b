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
