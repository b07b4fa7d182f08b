"""What the web page refuses: strangers, forged forms, paths out of the run roots, oversized bodies, leaked secrets.

- **Who may connect.** Bound to loopback, the server answers only requests whose ``Host`` names
  loopback, so a web site that rebinds its DNS name to 127.0.0.1 still cannot read the pages.
  Bound to any other address it needs a token: given once as ``?token=`` it is swapped for an
  HttpOnly cookie and taken off the address bar, so it never lands in history or a log.
- **Forged forms.** Every form and the live websocket carry a token signed from a per-browser
  cookie; a site elsewhere can neither read the cookie nor compute the token. ``Origin`` must be
  this server's own where a browser sends one.
- **Paths.** A run folder is named as ``<root index>/<path under that root>``; ``..``, absolute
  paths and symbolic links that lead out of the root are refused, and so are files of a run
  folder that are links out of it.
- **Secrets.** Anything shown or logged passes :func:`m3d_agents.redaction.redact` first (the
  product's one rule set), with the server's own token added to the keys it masks.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import os
import re
import secrets
from pathlib import Path, PurePosixPath
from typing import Sequence
from urllib.parse import urlsplit

from debates.ui.web.errors import PageError

TOKEN_COOKIE = "m3d_token"
CSRF_COOKIE = "m3d_csrf"
LOOPBACK_NAMES = {"localhost", "127.0.0.1", "::1"}


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a name or an address, IPv6 with or without brackets) is this machine only."""
    bare = host.strip().strip("[]").lower()
    if bare == "localhost":
        return True
    try:
        return ipaddress.ip_address(bare).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """The host part of a ``Host`` header, without the port."""
    header = header.strip().lower()
    if header.startswith("["):
        return header[1 : header.find("]")] if "]" in header else header
    return header.rsplit(":", 1)[0] if header.count(":") == 1 else header


def same_origin(origin: str, host_header: str) -> bool:
    """Whether an ``Origin`` header names this server (same host and port as the ``Host`` header)."""
    parts = urlsplit(origin)
    return bool(parts.scheme in ("http", "https") and parts.netloc) and parts.netloc.lower() == host_header.strip().lower()


def token_matches(given: str | None, expected: str) -> bool:
    return given is not None and hmac.compare_digest(given.encode(), expected.encode())


# --- forms ---------------------------------------------------------------------------------------


class CsrfSigner:
    """Form tokens bound to one browser's cookie and this server process."""

    def __init__(self, key: bytes | None = None) -> None:
        self._key = key or secrets.token_bytes(32)

    @staticmethod
    def new_cookie() -> str:
        return secrets.token_urlsafe(24)

    def token_for(self, cookie: str) -> str:
        return hmac.new(self._key, cookie.encode(), hashlib.sha256).hexdigest()

    def valid(self, cookie: str | None, token: str | None) -> bool:
        return bool(cookie) and token is not None and hmac.compare_digest(self.token_for(cookie or ""), token)


# --- run folders ---------------------------------------------------------------------------------

RUN_FILE_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]{0,120}$")


def resolve_run_ref(roots: Sequence[Path], ref: str) -> Path:
    """The run folder that ``ref`` (``<root index>/<relative path>``) names, or a PageError saying why not."""
    if not roots:
        raise PageError(404, "This server was started without run folders; start it with --runs PATH.")
    if "\x00" in ref or "\\" in ref:
        raise PageError(400, "Refused: the run path holds a character that paths here may not have.")
    index_text, _, rest = ref.partition("/")
    if not index_text.isdigit() or int(index_text) >= len(roots):
        raise PageError(404, f"Refused: {ref!r} does not start with the number of a run root (0 to {len(roots) - 1}).")
    root = roots[int(index_text)].resolve()
    relative = PurePosixPath(rest)
    if rest.startswith("/") or relative.is_absolute():
        raise PageError(403, "Refused: a run folder is named by a path under a run root, never by an absolute path.")
    if any(part == ".." for part in relative.parts):
        raise PageError(403, "Refused: '..' in a run path would leave the run roots; only folders under them can be opened.")
    candidate = root.joinpath(*relative.parts)
    resolved = candidate.resolve()
    if not resolved.is_relative_to(root):
        raise PageError(403, "Refused: that path is a symbolic link that leads out of the run roots.")
    if not resolved.is_dir():
        raise PageError(404, f"There is no folder {rest or '.'!r} under run root {index_text}.")
    return resolved


def run_member(run_dir: Path, name: str) -> Path:
    """A file directly inside a run folder that is not a link out of it."""
    if not RUN_FILE_NAME.match(name):
        raise PageError(400, f"Refused: {name!r} is not the name of a file of a run folder.")
    path = run_dir / name
    if path.is_symlink() and not path.resolve().is_relative_to(run_dir.resolve()):
        raise PageError(403, f"Refused: {name} is a symbolic link out of the run folder.")
    return path


def read_member_bytes(run_dir: Path, name: str, max_bytes: int = 20 * 1024 * 1024) -> bytes:
    """The bytes of a run folder's file, opened without following a final symbolic link."""
    path = run_member(run_dir, name)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except FileNotFoundError:
        raise PageError(404, f"The run folder has no file {name}.") from None
    except OSError:
        raise PageError(403, f"Refused: {name} cannot be opened as a plain file of the run folder.") from None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise PageError(413, f"{name} is larger than the page shows ({max_bytes} bytes).")
    return data


def find_runs(roots: Sequence[Path], max_depth: int = 3, limit: int = 500) -> list[tuple[str, Path]]:
    """Run folders (holding ``run.json``) under each root, as (ref, folder), not following links out."""
    found: list[tuple[str, Path]] = []
    for index, root in enumerate(roots):
        base = root.resolve()
        if not base.is_dir():
            continue
        stack: list[tuple[Path, int]] = [(base, 0)]
        while stack and len(found) < limit:
            folder, depth = stack.pop()
            if (folder / "run.json").is_file():
                relative = folder.relative_to(base).as_posix()
                found.append((f"{index}/{'' if relative == '.' else relative}", folder))
            if depth >= max_depth:
                continue
            try:
                children = sorted(folder.iterdir(), reverse=True)
            except OSError:
                continue
            for child in children:
                if child.is_dir() and not child.name.startswith(".") and child.resolve().is_relative_to(base):
                    stack.append((child, depth + 1))
    return sorted(found)
