"""Run ``m3d`` as a person sees it: in a pseudo-terminal of a given width, or into a pipe."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from typing import Mapping

from tests.support.paths import REPO

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07")


def m3d_in_terminal(args: list[str], columns: int = 80, env: Mapping[str, str] | None = None, timeout_s: float = 120) -> str:
    """What ``m3d ARGS`` shows in a terminal ``columns`` wide (colours taken out, line ends made plain)."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "-m", "debates", *args], cwd=REPO, stdin=follower, stdout=follower, stderr=follower,
        env={**_plain_env(), "COLUMNS": str(columns), "TERM": "xterm", **(env or {})}, close_fds=True,
    )
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the follower side closed: the command has ended
            break
        if not data:
            break
        chunks.append(data)
    process.wait(timeout=timeout_s)
    os.close(leader)
    return ANSI.sub("", b"".join(chunks).decode("utf-8", "replace")).replace("\r\n", "\n").replace("\r", "")


def m3d_in_pipe(args: list[str], env: Mapping[str, str] | None = None, timeout_s: float = 120) -> subprocess.CompletedProcess[str]:
    """``m3d ARGS | cat``: stdout and stderr are pipes, as in a script or a log."""
    return subprocess.run([sys.executable, "-m", "debates", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=timeout_s, env={**_plain_env(), **(env or {})})


def _plain_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "TERM", "NO_COLOR")}
