"""Opening the files the product writes (and reads back) without following symbolic links.

A run folder, a study folder or a cache folder may be writable by someone else (a shared file
system, a folder unpacked from an archive). A link planted there as ``.lock`` or ``results.jsonl``
would make the next run truncate or append to whatever the link points at, with the user's
rights. So every such file is opened with ``O_NOFOLLOW`` (the kernel refuses a link at the last
path component) and checked to be a regular file; a link or a device is refused with one line
naming it, never written through. Whole files are replaced through a temporary file and a
rename, so a crash or a full disk leaves either the old file or the new one.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path
from typing import Callable

from m3d_agents.errors import InputError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


class UnsafeFile(InputError):
    """A file the product would write or read is a symbolic link, or not a regular file."""

    def __init__(self, path: Path, what: str) -> None:
        super().__init__(str(path), f"is {what}; m3d neither writes nor reads through it (remove it, or choose another folder)")


def refuse_link(path: Path) -> None:
    """An :class:`UnsafeFile` error if ``path`` exists and is a link or anything but a regular file."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(str(path), f"cannot be checked: {exc.strerror or exc}") from None
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeFile(path, "a symbolic link")
    if not stat.S_ISREG(info.st_mode):
        raise UnsafeFile(path, "not a regular file")


def refuse_linked_folder(path: Path) -> None:
    """An :class:`UnsafeFile` error if the folder ``path`` (inside a run folder) is a link or not a folder."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISLNK(info.st_mode):
        raise UnsafeFile(path, "a symbolic link")
    if not stat.S_ISDIR(info.st_mode):
        raise UnsafeFile(path, "not a folder")


def open_nofollow(path: Path, flags: int, mode: int = 0o644) -> int:
    """``os.open`` that refuses a link or a non-regular file at ``path`` (see the module docstring)."""
    refuse_link(path)
    try:
        fd = os.open(path, flags | _NOFOLLOW | _CLOEXEC | os.O_NONBLOCK, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFile(path, "a symbolic link") from None
        if exc.errno == errno.ENXIO:
            raise UnsafeFile(path, "not a regular file") from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafeFile(path, "not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def append_fd(path: Path) -> int:
    """A descriptor for appending to ``path`` (created if missing), never through a link."""
    return open_nofollow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)


def read_bytes_nofollow(path: Path, limit: int | None = None) -> bytes:
    """The bytes of ``path``, never through a link; an :class:`InputError` if it holds more than ``limit``."""
    fd = open_nofollow(path, os.O_RDONLY)
    try:
        size = os.fstat(fd).st_size
        if limit is not None and size > limit:
            raise InputError(str(path), f"holds {size} bytes, over the limit of {limit}")
        chunks = []
        while True:
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                break
            chunks.append(chunk)
            size -= len(chunk)
            if limit is not None and size < -limit:
                raise InputError(str(path), f"grew past the limit of {limit} bytes while being read")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text_nofollow(path: Path, limit: int | None = None) -> str:
    """The UTF-8 text of ``path`` (see :func:`read_bytes_nofollow`); other encodings are named as such."""
    data = read_bytes_nofollow(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(str(path), f"is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None


def replace_file(path: Path, data: bytes | str) -> None:
    """``path`` now holds ``data``, whole: refused if ``path`` is a link; else a temporary file beside
    it, fsynced and renamed over it. A failed write (a full disk) is an error naming the file."""
    refuse_link(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise write_failed(path, exc) from None
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(payload)
            out.flush()
            os.fsync(out.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException as exc:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise write_failed(path, exc) from None
        raise


def write_all(fd: int, data: bytes, path: Path) -> None:
    """Every byte of ``data`` to ``fd`` (a short write is continued); a failed write names ``path``."""
    view = memoryview(data)
    try:
        while view:
            written = os.write(fd, view)
            view = view[written:]
    except OSError as exc:
        raise write_failed(path, exc) from None


def write_failed(path: Path, exc: OSError) -> InputError:
    """A write that failed (a full disk, a quota, a read-only file system), as one line naming the file."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return InputError(str(path), "cannot be written: the disk is full; free some space and rerun (finished work is kept)")
    return InputError(str(path), f"cannot be written: {exc.strerror or exc}")


def cut_torn_tail(path: Path) -> bool:
    """Cut a last line that has no newline (an append that a crash interrupted) off ``path``; whether one was cut.

    Appending after such a line would glue the next row onto it, and both would be lost."""
    try:
        fd = open_nofollow(path, os.O_RDWR)
    except FileNotFoundError:
        return False
    try:
        size = os.fstat(fd).st_size
        if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
            return False
        keep, block = 0, 1 << 16
        end = size
        while end > 0:
            start = max(0, end - block)
            chunk = os.pread(fd, end - start, start)
            newline = chunk.rfind(b"\n")
            if newline >= 0:
                keep = start + newline + 1
                break
            end = start
        os.ftruncate(fd, keep)
        os.fsync(fd)
        return True
    except OSError as exc:
        raise write_failed(path, exc) from None
    finally:
        os.close(fd)


class AppendOnlyFile:
    """A log of lines (``results.jsonl``, ``annotations.jsonl``, ``trajectories.jsonl``): each line is
    one ``write`` on a descriptor opened for appending without following links, then fsynced, so a
    crash leaves every earlier line whole and at most one torn line at the end, which :meth:`open`
    cuts off before anything is appended."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None
        self.repaired = False

    def open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise write_failed(self.path.parent, exc) from None
        existed = os.path.lexists(self.path)
        self.repaired = cut_torn_tail(self.path)
        self._fd = append_fd(self.path)
        if not existed:
            directory = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)

    def append(self, line: bytes) -> None:
        if self._fd is None:
            raise RuntimeError(f"{self.path} is not open")
        write_all(self._fd, line if line.endswith(b"\n") else line + b"\n", self.path)
        try:
            os.fsync(self._fd)
        except OSError as exc:
            raise write_failed(self.path, exc) from None

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "AppendOnlyFile":
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def refuse_foreign_folder(path: Path, field: str, owned: Callable[[str], bool], what: str) -> None:
    """Refuse to write into the existing folder ``path`` when it holds anything ``owned`` does not claim:
    a folder of someone else's files (the current folder, a project) is never written over."""
    try:
        names = sorted(entry.name for entry in path.iterdir())
    except FileNotFoundError:
        return
    except NotADirectoryError:
        raise InputError(field, f"{path} is a file, not a folder") from None
    except OSError as exc:
        raise InputError(field, f"cannot list {path}: {exc.strerror or exc}") from None
    foreign = [name for name in names if not owned(name)]
    if foreign:
        shown = ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")
        raise InputError(field, f"{path} is not empty and is not {what} (it holds {shown}); choose a new or empty folder")
