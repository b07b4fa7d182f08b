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
