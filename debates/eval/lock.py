"""One run per folder: an exclusive lock that a crashed run cannot leave behind.

Two ``m3d evaluate`` processes appending to one ``results.jsonl`` would both run the pending
samples and write each row twice. The lock is an ``flock`` on ``<run>/.lock``: the kernel drops it
when the holding process ends, however it ends (even by SIGKILL), so a stale lock file never
blocks a resume. The file records the holder's pid for the error message only. It is opened
without following links: a ``.lock`` planted as a link would otherwise truncate its target.

The same lock tells a reader (``m3d report``) whether a run is still being written: a run with
fewer rows than it asked for is *running* while another process holds the lock, and *interrupted*
only once nobody does.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path
from types import TracebackType

from m3d_agents.errors import InputError
from m3d_agents.safe_files import open_nofollow, write_failed

LOCK = ".lock"

_held: set[str] = set()
"""The run folders this process holds (their real paths): a report this process writes on its own
running run (``m3d evaluate``'s closing report) is not about another process's run."""


def running_elsewhere(run_dir: Path) -> str | None:
    """The pid another process wrote into the lock of ``run_dir`` while it holds the lock now, or None.

    Only looks: the lock file is never created, and a shared lock is held for an instant only."""
    if os.path.realpath(run_dir) in _held:
        return None
    try:
        fd = open_nofollow(run_dir / LOCK, os.O_RDONLY)
    except (OSError, InputError):
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return os.pread(fd, 32, 0).decode(errors="replace").strip() or "another process"
        except OSError:
            return None
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


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
        _held.add(os.path.realpath(self.path.parent))

    def release(self) -> None:
        if self._fd is not None:
            _held.discard(os.path.realpath(self.path.parent))
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "RunLock":
        self.acquire()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None) -> None:
        self.release()
