"""The checks every media file passes before a decoder reads it.

Images and videos come from users and data sets; a missing path, a folder, an empty file or one
over the size limit gets one line naming the field, before any decoder sees its bytes.
"""

from __future__ import annotations

from pathlib import Path

from m3d_agents.errors import InputError


def checked_size(path: Path, max_bytes: int, field: str) -> int:
    """The size of ``path`` in bytes, once it is known to be a non-empty regular file within ``max_bytes``."""
    if not path.exists():
        raise InputError(field, f"file {path} does not exist")
    if not path.is_file():
        raise InputError(field, f"{path} is not a regular file")
    size = path.stat().st_size
    if size == 0:
        raise InputError(field, f"file {path} is empty")
    if size > max_bytes:
        raise InputError(field, f"file {path} has {size} bytes, over the limit of {max_bytes}")
    return size
