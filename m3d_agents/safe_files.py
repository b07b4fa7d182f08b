"""Writing the files of a folder the product owns (a run folder, a study folder, a comparison, a
training output, a cache) so that nothing planted there can send a write anywhere else.

A run folder, a study folder or a cache folder may be writable by someone else (a shared file
system, a folder unpacked from an archive). A link planted there as ``.lock``, ``results.jsonl``,
``run.json.tmp`` or ``reviews/`` would make the next command truncate, append to or replace
whatever the link points at, with the user's rights. So every such file is reached through
:class:`OwnedFolder`, the one helper for it:

- the folder is opened once as a descriptor, and every name inside it is reached from that
  descriptor one component at a time with ``O_NOFOLLOW`` (``openat``-style): a link, as a file or
  as a subfolder, is refused with one line naming it, never followed; a name with ``..`` or an
  absolute path is refused outright, so nothing is written outside the folder;
- a whole file is replaced through a temporary file created with ``O_EXCL`` under a random name
  in the same folder (so no link planted under a guessable name is ever opened), fsynced, and
  renamed over the target inside the same folder descriptor; a crash or a full disk leaves either
  the old file or the new one;
- text written is redacted (:mod:`m3d_agents.redaction`): a JSON document as data, string by
  string, so it stays valid JSON; other text as a whole. Only bytes (images) are written as given.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import shutil
import stat
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Iterable, Iterator

from pydantic import BaseModel

from m3d_agents.errors import InputError
from m3d_agents.redaction import redact, redact_data

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


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


def _json_text(data: Any, indent: int | None) -> str:
    """``data`` (a pydantic model or what ``json`` writes) as JSON text with every string redacted."""
    plain = data.model_dump(mode="json") if isinstance(data, BaseModel) else data
    return json.dumps(redact_data(plain), ensure_ascii=False, indent=indent)


class OwnedFolder:
    """A folder whose files the product writes, reached only through a descriptor of it (see the module docstring).

    ``root`` itself is the folder the user named (it may lie behind a link of the user's own, such as
    a ``runs`` folder on another disk); everything inside it is the product's, and no link there is
    followed. Names are relative and use ``/`` between folders (``reviews/p1.json``). A folder the
    product made inside another (a saved debate under ``<runs>/live/``) is a :meth:`subfolder`: it is
    reached from the outer folder's descriptor, so a link planted later as ``live`` leads nowhere."""

    def __init__(self, root: Path, inside: tuple[str, ...] = ()) -> None:
        self.root = Path(root)
        self._inside = inside

    def __repr__(self) -> str:
        return f"OwnedFolder({str(self.location)!r})"

    @property
    def location(self) -> Path:
        """The folder's path, for messages and for readers that take a path."""
        return self.root.joinpath(*self._inside)

    def path(self, name: str) -> Path:
        """Where ``name`` is, for messages and for readers that take a path."""
        return self.root.joinpath(*self._parts(name))

    def _parts(self, name: str) -> tuple[str, ...]:
        parts = PurePosixPath(name).parts
        if not parts or PurePosixPath(name).is_absolute() or any(p in ("..", ".") for p in parts) or "\0" in name:
            raise InputError(str(self.location / name), "is not a name inside the folder; m3d writes only inside the folders it owns")
        return self._inside + parts

    def subfolder(self, name: str) -> "OwnedFolder":
        """The folder ``name`` inside this one, reached from this one's descriptor (see the class docstring)."""
        return OwnedFolder(self.root, self._parts(name))

    def create(self) -> "OwnedFolder":
        """Make the folder (and its parents) if it is missing; an error naming it if that fails."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except FileExistsError:
            raise InputError(str(self.root), "is a file, not a folder") from None
        except OSError as exc:
            raise write_failed(self.root, exc) from None
        if self._inside:
            with self._folder_of("-", True):
                pass
        return self

    def new_folder(self, name: str) -> "OwnedFolder":
        """The folder ``name`` inside this one, made now: an error if anything is there already."""
        with self._folder_of(name, True) as (folder, leaf):
            try:
                os.mkdir(leaf, 0o755, dir_fd=folder)
            except FileExistsError:
                raise InputError(str(self.path(name)), "exists already; a new folder was expected there") from None
            except OSError as exc:
                raise write_failed(self.path(name), exc) from None
        return self.subfolder(name)

    @contextmanager
    def _folder_of(self, name: str, create: bool) -> Iterator[tuple[int, str]]:
        """A descriptor of the folder that holds ``name`` (its subfolders made with ``create``), and the last part of ``name``."""
        parts = self._parts(name)
        try:
            fd = os.open(self.root, os.O_RDONLY | _DIRECTORY | _CLOEXEC)
        except NotADirectoryError:
            raise InputError(str(self.root), "is a file, not a folder") from None
        try:
            walked = self.root
            for part in parts[:-1]:
                walked = walked / part
                if create:
                    try:
                        os.mkdir(part, 0o755, dir_fd=fd)
                    except FileExistsError:
                        pass
                try:
                    child = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
                except OSError as exc:
                    if exc.errno == errno.ELOOP:
                        raise UnsafeFile(walked, "a symbolic link") from None
                    if exc.errno == errno.ENOTDIR:
                        kind = _kind_at(fd, part)
                        raise UnsafeFile(walked, "a symbolic link" if kind == "link" else "not a folder") from None
                    raise
                os.close(fd)
                fd = child
            yield fd, parts[-1]
        finally:
            os.close(fd)

    def open(self, name: str, flags: int, mode: int = 0o644, *, create_folders: bool = False) -> int:
        """``os.open`` of ``name`` inside the folder that refuses a link or a non-regular file at any step."""
        with self._folder_of(name, create_folders) as (folder, leaf):
            return _open_at(folder, leaf, flags, mode, self.path(name))

    def lexists(self, name: str) -> bool:
        """Whether anything (a link included) is at ``name``; a link on the way there counts as nothing."""
        try:
            with self._folder_of(name, False) as (folder, leaf):
                os.stat(leaf, dir_fd=folder, follow_symlinks=False)
                return True
        except (FileNotFoundError, NotADirectoryError, InputError):
            return False

    def write(self, name: str, data: bytes | str, *, create_folders: bool = True) -> None:
        """``name`` now holds ``data``, whole (see the module docstring). Text is redacted; bytes are written as given,
        so they are for binary formats (images) only. A failed write (a full disk) is an error naming the file."""
        payload = data if isinstance(data, bytes) else redact(data).encode("utf-8")
        target = self.path(name)
        try:
            with self._folder_of(name, create_folders) as (folder, leaf):
                _refuse_link_at(folder, leaf, target)
                temporary = f".{leaf[:80]}.{secrets.token_hex(8)}.tmp"
                fd = _open_at(folder, temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644, self.path(name).parent / temporary)
                try:
                    try:
                        write_all(fd, payload, target)
                        os.fsync(fd)
                    finally:
                        os.close(fd)
                    os.replace(temporary, leaf, src_dir_fd=folder, dst_dir_fd=folder)
                except BaseException:
                    try:
                        os.unlink(temporary, dir_fd=folder)
                    except OSError:
                        pass
                    raise
                try:
                    os.fsync(folder)
                except OSError:
                    pass
        except OSError as exc:
            raise write_failed(target, exc) from None

    def write_json(self, name: str, data: Any, *, indent: int | None = 2, create_folders: bool = True) -> None:
        """``name`` now holds ``data`` (a pydantic model or plain JSON data) as JSON, every string in it redacted."""
        self.write(name, _json_text(data, indent).encode("utf-8"), create_folders=create_folders)

    def write_jsonl(self, name: str, rows: Iterable[Any], *, create_folders: bool = True) -> None:
        """``name`` now holds one JSON line per row, every string in them redacted."""
        text = "".join(_json_text(row, None) + "\n" for row in rows)
        self.write(name, text.encode("utf-8"), create_folders=create_folders)

    def append_log(self, name: str) -> "AppendOnlyFile":
        """The append-only log ``name`` (not opened yet)."""
        return AppendOnlyFile(self.path(name), folder=self, name=name)

    @contextmanager
    def staging(self) -> Iterator[Path]:
        """A private folder (mode 0700, a random name, made new) inside this one for a library that writes files
        its own way (a trainer's checkpoints); on success everything in it is moved into this folder by
        :meth:`adopt`, and on failure it is left for inspection. Nothing planted beforehand can be inside it."""
        name = f".staging-{secrets.token_hex(8)}"
        self.create()
        with self._folder_of(name, True) as (folder, leaf):
            try:
                os.mkdir(leaf, 0o700, dir_fd=folder)
            except OSError as exc:
                raise write_failed(self.path(name), exc) from None
        yield self.path(name)
        self.adopt(name)

    def adopt(self, staged: str) -> None:
        """Move every entry of the subfolder ``staged`` up into this folder, replacing an earlier one of the same name
        (a file, or a folder this product wrote); a link in the way is refused, never followed or written through."""
        with self._folder_of(f"{staged}/-", False) as (source, _), self._folder_of("-", False) as (target, _):
            for entry in sorted(os.listdir(source)):
                shown = self.path(entry)
                kind = _kind_at(target, entry)
                if kind == "link":
                    raise UnsafeFile(shown, "a symbolic link")
                if kind == "folder" and _kind_at(source, entry) == "folder":
                    shutil.rmtree(entry, dir_fd=target)
                try:
                    os.replace(entry, entry, src_dir_fd=source, dst_dir_fd=target)
                except OSError as exc:
                    raise write_failed(shown, exc) from None
        with self._folder_of(staged, False) as (parent, leaf):
            os.rmdir(leaf, dir_fd=parent)

    def read_bytes(self, name: str, limit: int | None = None) -> bytes:
        """The bytes of ``name``, never through a link; an :class:`InputError` if it holds more than ``limit``."""
        return _read_fd(self.open(name, os.O_RDONLY), self.path(name), limit)

    def copy_in(self, source: Path, name: str) -> None:
        """A copy of the file ``source`` (from outside the folder: a post's image the user named) as ``name``."""
        try:
            data = Path(source).read_bytes()
        except OSError as exc:
            raise InputError(str(source), f"cannot be read: {exc.strerror or exc}") from None
        self.write(name, data)


def _kind_at(folder: int, name: str) -> str:
    try:
        info = os.stat(name, dir_fd=folder, follow_symlinks=False)
    except OSError:
        return "missing"
    if stat.S_ISLNK(info.st_mode):
        return "link"
    if stat.S_ISDIR(info.st_mode):
        return "folder"
    return "file" if stat.S_ISREG(info.st_mode) else "other"


def _refuse_link_at(folder: int, name: str, shown: Path) -> None:
    kind = _kind_at(folder, name)
    if kind == "link":
        raise UnsafeFile(shown, "a symbolic link")
    if kind in ("folder", "other"):
        raise UnsafeFile(shown, "not a regular file")


def _open_at(folder: int, name: str, flags: int, mode: int, shown: Path) -> int:
    _refuse_link_at(folder, name, shown)
    try:
        fd = os.open(name, flags | _NOFOLLOW | _CLOEXEC | os.O_NONBLOCK, mode, dir_fd=folder)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise UnsafeFile(shown, "a symbolic link") from None
        if exc.errno in (errno.ENXIO, errno.EISDIR):
            raise UnsafeFile(shown, "not a regular file") from None
        if exc.filename is None:
            exc.filename = str(shown)
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UnsafeFile(shown, "not a regular file")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _read_fd(fd: int, path: Path, limit: int | None) -> bytes:
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


def open_nofollow(path: Path, flags: int, mode: int = 0o644) -> int:
    """``os.open`` that refuses a link or a non-regular file at ``path`` (see the module docstring)."""
    return OwnedFolder(path.parent).open(path.name, flags, mode)


def append_fd(path: Path) -> int:
    """A descriptor for appending to ``path`` (created if missing), never through a link."""
    return open_nofollow(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)


def read_bytes_nofollow(path: Path, limit: int | None = None) -> bytes:
    """The bytes of ``path``, never through a link; an :class:`InputError` if it holds more than ``limit``."""
    return OwnedFolder(path.parent).read_bytes(path.name, limit)


def read_text_nofollow(path: Path, limit: int | None = None) -> str:
    """The UTF-8 text of ``path`` (see :func:`read_bytes_nofollow`); other encodings are named as such."""
    data = read_bytes_nofollow(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(str(path), f"is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None


def replace_file(path: Path, data: bytes | str) -> None:
    """``path`` now holds ``data``, whole, written by :meth:`OwnedFolder.write` in the folder that holds it."""
    OwnedFolder(path.parent).write(path.name, data, create_folders=False)


def replace_json(path: Path, data: Any, indent: int | None = 2) -> None:
    """``path`` now holds ``data`` as redacted JSON (:meth:`OwnedFolder.write_json`)."""
    OwnedFolder(path.parent).write_json(path.name, data, indent=indent, create_folders=False)


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


def cut_torn_tail(path: Path, folder: OwnedFolder | None = None, name: str | None = None) -> bool:
    """Cut a last line that has no newline (an append that a crash interrupted) off ``path``; whether one was cut.

    Appending after such a line would glue the next row onto it, and both would be lost."""
    folder, name = (folder, name) if folder is not None and name is not None else (OwnedFolder(path.parent), path.name)
    try:
        fd = folder.open(name, os.O_RDWR)
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
    cuts off before anything is appended. Opened through its :class:`OwnedFolder` (the folder that
    holds ``path`` unless one is given); :meth:`append_json` redacts what it writes."""

    def __init__(self, path: Path, *, folder: OwnedFolder | None = None, name: str | None = None) -> None:
        self.path = path
        self.folder = folder if folder is not None else OwnedFolder(path.parent)
        self.name = name if name is not None else path.name
        self._fd: int | None = None
        self.repaired = False

    def open(self) -> None:
        self.folder.create()
        existed = self.folder.lexists(self.name)
        self.repaired = cut_torn_tail(self.path, self.folder, self.name)
        try:
            self._fd = self.folder.open(self.name, os.O_WRONLY | os.O_APPEND | os.O_CREAT, create_folders=True)
        except OSError as exc:
            raise write_failed(self.path, exc) from None
        if not existed:
            directory = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(directory)
            finally:
                os.close(directory)

    def append(self, line: bytes) -> None:
        """One line as given (the caller redacted it); see :meth:`append_json`."""
        if self._fd is None:
            raise RuntimeError(f"{self.path} is not open")
        write_all(self._fd, line if line.endswith(b"\n") else line + b"\n", self.path)
        try:
            os.fsync(self._fd)
        except OSError as exc:
            raise write_failed(self.path, exc) from None

    def append_json(self, data: Any) -> None:
        """One JSON line of ``data`` (a pydantic model or plain JSON data), every string in it redacted."""
        self.append((_json_text(data, None) + "\n").encode("utf-8"))

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
