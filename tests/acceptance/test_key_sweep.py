"""No key in any line printed or any file written, by any command, with a model server that echoes the key.

The sweep (``tests/support/key_sweep.py``) runs every command as a real process against a loopback server
that writes the request's ``Authorization`` header into its answers and its errors, then searches every
stream the commands printed, every page and websocket message the web page served, and every file under the
project folder (run folders, trajectories, saved debates, studies, the response cache, the evidence store).
``benchmarks/key_sweep.py`` prints the same counts.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.key_sweep import KEY, MR2, sweep_every_command


@pytest.mark.integration
def test_no_command_prints_or_writes_a_key_its_server_echoed(tmp_path: Path) -> None:
    sweep = sweep_every_command(tmp_path)
    assert sweep.sent >= 50, "the key must have reached the echoing server, and so every answer"
    assert {"evaluate check --record-trajectories", "serve", "export-sft", "reproduce", "report", "compare --out"} <= \
        set(sweep.commands)
    assert "evidence" in sweep.commands or not MR2.is_dir()
    assert (tmp_path / "runs" / "check" / "trajectories.jsonl").is_file(), "the recorded completions are searched"
    assert sweep.files >= 100 and sweep.lines > 1000 and sweep.output_lines > 500
    assert sweep.appearances == 0, f"{KEY} appeared: {sweep.where}"
    assert "***" in (tmp_path / "runs" / "check" / "trajectories.jsonl").read_text(), "the echo reached the file, masked"
