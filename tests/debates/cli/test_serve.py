"""``m3d serve`` refuses what it cannot serve safely with one line, before it binds anything."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from debates.cli.main import app
from debates.ui.web import server


@pytest.mark.parametrize("args, env, line", [
    (["--dataset", "nope:/x"], {}, "error: dataset: unknown dataset kind 'nope'"),
    (["--runs", "/nonexistent/runs"], {}, "error: runs: /nonexistent/runs is not a folder"),
    (["--host", "0.0.0.0"], {"M3D_SERVE_TOKEN": "short"}, "error: token: a server token needs at least 16 characters"),
    (["--backend", "nowhere"], {}, "error: backend: unknown backend 'nowhere'"),
    (["--retrieval", "sometimes"], {}, "error: retrieval: 'sometimes' is not one of live, record, replay, off"),
])
def test_serve_refuses_bad_settings_with_one_line(
    args: list[str], env: dict[str, str], line: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*_args: object) -> None:
        raise AssertionError("m3d serve started a server for settings it should refuse")

    monkeypatch.setattr(server, "build_server", never)
    result = CliRunner().invoke(app, ["serve", *args, "--token-file", str(tmp_path / "t")], env={"COLUMNS": "300", **env})
    assert result.exit_code == 2
    assert line in " ".join(result.output.split())
    assert "Traceback" not in result.output
