"""Where the response cache keeps its answers: one JSON file per request, never a pickled object.

Why not AutoGen's disk store: it pickles what it stores, and unpickling runs code, so whoever can
write the cache folder (a shared file system of a Ray cluster, another account on the machine)
could run commands in every later run. A JSON file holds data only: reading one back can at worst
give a wrong answer to the request it is keyed by, never run anything.

Every entry is read defensively: a file that is missing, a link, too large, not JSON, too deeply
nested or not a stored answer is a *miss* with one warning naming the file, and the next answer
overwrites it. A cache is an optimisation; it never fails a run. Writes go through a temporary
file and a rename, so a crash or a full disk never leaves half an entry, and what is written passes
redaction first, so a key that a server echoed into an answer is never stored.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any, Union

from autogen_core import CacheStore
from autogen_core.models import CreateResult
from pydantic import ValidationError

from m3d_agents.redaction import redact_data
from m3d_agents.errors import InputError
from m3d_agents.safe_files import read_bytes_nofollow, replace_file
from m3d_agents.safe_json import JsonTooDeep, loads_bounded

log = logging.getLogger(__name__)

FORMAT = "m3d-response/1"
MAX_ENTRY_BYTES = 64 * 1024 * 1024
"""Far above any answer the transports accept (see ``max_answer_bytes``); a larger file is not ours."""

Stored = Union[CreateResult, list[Union[str, CreateResult]]]


class JsonResponseStore(CacheStore[Stored]):
    """A folder of ``<key[:2]>/<key>.json`` files, each one request's answer (or its choices)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def path(self, key: str) -> Path:
        safe = "".join(c for c in key if c.isalnum())[:128] or "empty"
        return self.folder / safe[:2] / f"{safe}.json"

    def get(self, key: str, default: Stored | None = None) -> Stored | None:
        path = self.path(key)
        try:
            raw = read_bytes_nofollow(path, MAX_ENTRY_BYTES)
        except FileNotFoundError:
            return default
        except (InputError, OSError) as exc:
            return self._miss(path, getattr(exc, "problem", None) or getattr(exc, "strerror", None) or str(exc), default)
        try:
            data = loads_bounded(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError, JsonTooDeep) as exc:
            return self._miss(path, f"not a JSON entry ({type(exc).__name__})", default)
        if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("results"), list):
            return self._miss(path, f"not a stored answer of format {FORMAT}", default)
        try:
            results = [CreateResult.model_validate(item) for item in data["results"]]
        except ValidationError as exc:
            return self._miss(path, f"a stored answer that does not validate ({exc.error_count()} problems)", default)
        if not results:
            return self._miss(path, "an entry without answers", default)
        if data.get("choices"):
            return list[Union[str, CreateResult]](results)
        return results[0]

    def set(self, key: str, value: Stored) -> None:
        items = value if isinstance(value, list) else [value]
        results = [item for item in items if isinstance(item, CreateResult)]
        if not results:
            return
        entry: dict[str, Any] = {
            "format": FORMAT,
            "choices": isinstance(value, list),
            "results": redact_data([r.model_dump(mode="json") for r in results]),
        }
        path = self.path(key)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            replace_file(path, json.dumps(entry, ensure_ascii=False).encode("utf-8"))
        except (InputError, OSError) as exc:
            log.warning("response cache: could not store an answer in %s (%s); the run goes on without caching it",
                        path, getattr(exc, "problem", None) or getattr(exc, "strerror", None) or exc)

    @staticmethod
    def _miss(path: Path, why: str, default: Stored | None) -> Stored | None:
        log.warning("response cache: ignoring the unreadable entry %s (%s); the model is asked again", path, why)
        return default

