"""`m3d check` and `m3d debate` take a video and its transcript; bad video input is one line naming the field."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from debates.cli.common import build_sample
from debates.cli.main import app
from m3d_agents.errors import InputError


def test_build_sample_carries_the_video_and_transcript(tmp_path: Path) -> None:
    sample = build_sample("a post", [], "binary", None, None, None, tmp_path / "v.mp4", "words")
    assert sample.video is not None and sample.video.path == tmp_path / "v.mp4" and sample.video.transcript == "words"
    with pytest.raises(InputError, match="transcript"):
        build_sample("a post", [], "binary", None, None, None, None, "words")


@pytest.mark.parametrize("command", ["check", "debate"])
def test_an_empty_video_is_a_one_line_error(command: str, tmp_path: Path) -> None:
    empty = tmp_path / "empty.mp4"
    empty.write_bytes(b"")
    result = CliRunner().invoke(app, [command, "--config", "factguard", "--video", str(empty), "--text", "a flood"],
                                env={"COLUMNS": "400", "TERM": "dumb"})
    assert result.exit_code == 2
    assert "video.path" in result.output and "empty" in result.output and "Traceback" not in result.output
