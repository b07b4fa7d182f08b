"""One run per folder: a second runner is refused while the first holds the folder; a killed one frees it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from debates.eval.lock import RunLock
from m3d_agents.errors import InputError
from tests.support.paths import REPO


def test_a_second_holder_is_refused_with_the_folder_and_pid(tmp_path: Path) -> None:
    with RunLock(tmp_path / "run"):
        with pytest.raises(InputError, match=rf"in use by a running m3d evaluate \(pid {os.getpid()}\)") as info:
            RunLock(tmp_path / "run").acquire()
        assert info.value.field == "out"
    with RunLock(tmp_path / "run"):
        pass


def test_a_process_killed_while_holding_the_lock_leaves_it_free(tmp_path: Path) -> None:
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pathlib import Path; from debates.eval.lock import RunLock; "
         "RunLock(Path(sys.argv[1])).acquire(); print('held', flush=True); time.sleep(60)", str(tmp_path / "run")],
        cwd=REPO, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(InputError, match="in use"):
            RunLock(tmp_path / "run").acquire()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    deadline = time.monotonic() + 10
    while True:
        try:
            with RunLock(tmp_path / "run"):
                break
        except InputError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)
