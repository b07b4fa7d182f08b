"""A content-addressed evidence store: what each provider answered, so a run can be replayed exactly.

Entries are keyed by the SHA-256 of the provider name plus its query (a search string, an image's
content hash, a URL, or the inputs of a summary), so the same question always lands on the same
entry. Three modes:

- ``record``: answer from the store when it has the entry, else ask the provider and save the answer;
- ``replay``: never ask a provider (no network); a missing entry is an error naming its key;
- ``refresh``: always ask the provider and overwrite the entry.

Running the same sample twice in ``record`` or ``replay`` mode therefore reuses exactly the same
evidence, retrieval times included.

The store holds data only (JSON text in SQLite rows), so reading it back never runs code. A file
that is not a store (a folder, a link, a damaged or foreign file) is refused when the store is
opened, with one line naming it, before any sample runs; an entry that no longer reads (damaged,
or recorded by an older version) is a miss with a warning naming the file and its key, answered
again and overwritten (in replay mode, reported like any other missing entry).
"""

from __future__ import annotations

import hashlib
import json
import logging
import sqlite3
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Awaitable, Callable, Literal, TypeVar

from pydantic import TypeAdapter, ValidationError

from m3d_agents.errors import BackendError, InputError
from m3d_agents.redaction import redact, redact_data
from m3d_agents.safe_files import UnsafeFile, refuse_link
from m3d_agents.safe_json import JsonTooDeep, loads_bounded

log = logging.getLogger(__name__)

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
        if self.path.is_dir():
            raise InputError("evidence-store", f"{self.path} is a folder; name the store's file (such as {self.path / 'evidence.sqlite'})")
        try:
            refuse_link(self.path)
        except UnsafeFile as exc:
            raise InputError("evidence-store", f"{self.path} {exc.problem}") from None
        if mode == "replay" and not self.path.is_file():
            raise InputError("store", f"replay-only mode needs an existing store, and {self.path} does not exist")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise InputError("evidence-store", f"cannot create the folder of {self.path}: {exc.strerror or exc}") from None
        self._lock = threading.Lock()
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False)
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS entries (key TEXT PRIMARY KEY, provider TEXT NOT NULL, query TEXT NOT NULL, "
                "payload TEXT NOT NULL, recorded_at TEXT NOT NULL)"
            )
            self._db.commit()
            columns = {str(r[1]) for r in self._db.execute("PRAGMA table_info(entries)")}
        except sqlite3.Error as exc:
            raise InputError("evidence-store", f"{self.path} is not a usable evidence store ({exc}); move it aside "
                             "or name another file with --evidence-store") from None
        if not {"key", "provider", "query", "payload", "recorded_at"} <= columns:
            self._db.close()
            raise InputError("evidence-store", f"{self.path} is an SQLite file but not an evidence store (its entries "
                             "table lacks columns); name another file with --evidence-store")

    def get(self, provider: str, query: str) -> str | None:
        key = entry_key(provider, query)
        try:
            with self._lock:
                row = self._db.execute("SELECT payload FROM entries WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error as exc:
            log.warning("evidence store %s: entry %s cannot be read (%s); treated as missing", self.path, key, exc)
            return None
        if row is None:
            return None
        if not isinstance(row[0], str):
            log.warning("evidence store %s: entry %s is not JSON text; treated as missing", self.path, key)
            return None
        return row[0]

    def put(self, provider: str, query: str, payload: str) -> str:
        """Record ``payload`` (JSON text) under the key of ``provider`` and ``query``, every string in it redacted: a page
        summary written by a model whose server echoes the key is stored masked, like every file the product writes."""
        key = entry_key(provider, query)
        if redact(payload) != payload:
            payload = json.dumps(redact_data(json.loads(payload)), ensure_ascii=False)
        try:
            with self._lock:
                self._db.execute(
                    "INSERT OR REPLACE INTO entries (key, provider, query, payload, recorded_at) VALUES (?, ?, ?, ?, ?)",
                    (key, provider, query, payload, datetime.now(timezone.utc).isoformat()),
                )
                self._db.commit()
        except sqlite3.Error as exc:
            log.warning("evidence store %s: could not record entry %s (%s); the run goes on without it", self.path, key, exc)
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
                try:
                    loads_bounded(payload)
                    value = adapter.validate_json(payload)
                except (ValueError, ValidationError, JsonTooDeep) as exc:
                    log.warning("evidence store %s: entry %s does not read as a %s answer (%s); treated as missing",
                                self.path, entry_key(provider, query), provider, type(exc).__name__)
                else:
                    self.reused += 1
                    return value
            if self.mode == "replay":
                raise StoreMiss(entry_key(provider, query), provider, query)
        value = await produce()
        self.put(provider, query, adapter.dump_json(value).decode())
        self.recorded += 1
        return value

    def close(self) -> None:
        with self._lock:
            self._db.close()
