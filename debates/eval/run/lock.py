"""One run per folder: an exclusive lock that a crashed run cannot leave behind.

Two ``m3d evaluate`` processes appending to one ``results.jsonl`` would both run the pending
samples and write each row twice. The lock is an ``flock`` on ``<run>/.lock``: the kernel drops it
when the holding process ends, however it ends (even by SIGKILL), so a stale lock file never
blocks a resume. The file records the holder's pid for the error message only. It is opened
without following links: a ``.lock`` planted as a link would otherwise truncate its target.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from m3d_agents.errors import InputError
from m3d_agents.safe_files import open_nofollow, write_failed

LOCK = ".lock"


class RunLock:
    """Held while a run writes to its folder; a second holder is refused with a clear error."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / LOCK
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = open_nofollow(self.path, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise InputError(
                "out", f"{self.path.parent} is in use by a running m3d evaluate (pid {holder}); wait for it to "
                "finish, or choose another --out folder"
            ) from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        except OSError as exc:
            os.close(fd)
            raise write_failed(self.path, exc) from None
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "RunLock":
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.release()
