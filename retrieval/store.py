"""A content-addressed evidence store: what each provider answered, so a run can be replayed exactly.

Entries are keyed by the SHA-256 of the provider name plus its query (a search string, an image's
content hash, a URL, or the inputs of a summary), so the same question always lands on the same
entry. Three modes:

- ``record``: answer from the store when it has the entry, else ask the provider and save the answer;
- ``replay``: never ask a provider (no network); a missing entry is an error naming its key;
- ``refresh``: always ask the provider and overwrite the entry.

Running the same sample twice in ``record`` or ``replay`` mode therefore reuses exactly the same
evidence, retrieval times included.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Awaitable, Callable, Literal, TypeVar

from pydantic import TypeAdapter

from m3d_agents.errors import BackendError

StoreMode = Literal["record", "replay", "refresh"]
T = TypeVar("T")


class StoreMiss(BackendError):
    """Replay-only mode was asked for something that was never recorded."""

    def __init__(self, key: str, provider: str, query: str) -> None:
        self.key = key
        self.provider = provider
        self.query = query
        shown = query if len(query) <= 120 else query[:117] + "..."
        super().__init__(
            f"the evidence store is replay-only and has no entry {key} (provider {provider!r}, query {shown!r}); "
            "record it first with mode 'record'"
        )


def entry_key(provider: str, query: str) -> str:
    return hashlib.sha256(f"{provider}\n{query}".encode()).hexdigest()


class EvidenceStore:
    """SQLite file of JSON payloads; safe to share between the coroutines of one process."""

    def __init__(self, path: Path | str, mode: StoreMode = "record") -> None:
        if mode not in ("record", "replay", "refresh"):
            raise ValueError(f"unknown store mode {mode!r}")
        self.path = Path(path)
        self.mode: StoreMode = mode
        self.reused = 0
        self.recorded = 0
        if mode == "replay" and not self.path.is_file():
            from m3d_agents.errors import InputError

            raise InputError("store", f"replay-only mode needs an existing store, and {self.path} does not exist")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._db.execute(
            "CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, provider TEXT NOT NULL, query TEXT NOT NULL, "
            "payload TEXT NOT NULL, recorded_at TEXT NOT NULL)"
        )
        self._db.commit()

    def get(self, provider: str, query: str) -> str | None:
        with self._lock:
            row = self._db.execute("SELECT payload FROM entries WHERE key = ?", (entry_key(provider, query),)).fetchone()
        return None if row is None else str(row[0])

    def put(self, provider: str, query: str, payload: str) -> str:
        key = entry_key(provider, query)
        with self._lock:
            self._db.execute(
                "INSERT OR REPLACE INTO entries (key, provider, query, payload, recorded_at) VALUES (?, ?, ?, ?, ?)",
                (key, provider, query, payload, datetime.now(timezone.utc).isoformat()),
            )
            self._db.commit()
        return key

    def __len__(self) -> int:
        with self._lock:
            return int(self._db.execute("SELECT COUNT(*) FROM entries").fetchone()[0])

    def keys(self, provider: str | None = None) -> list[str]:
        sql, args = "SELECT key FROM entries", tuple[str, ...]()
        if provider is not None:
            sql, args = sql + " WHERE provider = ?", (provider,)
        with self._lock:
            return [str(r[0]) for r in self._db.execute(sql + " ORDER BY key", args)]

    async def fetch(self, provider: str, query: str, produce: Callable[[], Awaitable[T]], kind: object) -> T:
        """The stored answer to ``query`` by ``provider``, or ``produce()``'s answer, per the mode.

        ``kind`` is the type of the answer (a pydantic model, ``list[Model]`` ...), used to
        serialise it and to read it back.
        """
        adapter: TypeAdapter[T] = TypeAdapter(kind)  # type: ignore[arg-type]
        if self.mode != "refresh":
            payload = self.get(provider, query)
            if payload is not None:
                self.reused += 1
                return adapter.validate_json(payload)
            if self.mode == "replay":
                raise StoreMiss(entry_key(provider, query), provider, query)
        value = await produce()
        self.put(provider, query, adapter.dump_json(value).decode())
        self.recorded += 1
        return value

    def close(self) -> None:
        with self._lock:
            self._db.close()
