"""The evidence store holds JSON rows; a file that is not a store is refused with its name before any
sample runs, and an entry that no longer reads is a miss with a warning, never a failed sample."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import pytest
from pydantic import BaseModel

from m3d_agents.errors import InputError
from retrieval.store import EvidenceStore, StoreMiss, entry_key


class Hit(BaseModel):
    url: str
    title: str


async def produce() -> list[Hit]:
    return [Hit(url="http://127.0.0.1/a", title="fresh")]


def test_a_folder_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="is a folder") as caught:
        EvidenceStore(tmp_path)
    assert caught.value.field == "evidence-store" and str(tmp_path) in str(caught.value)


@pytest.mark.parametrize("content", [b"this is not a database at all" * 40, b"SQLite format 3\x00" + b"\xff" * 4000])
def test_a_damaged_file_is_refused_naming_it(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "evidence.sqlite"
    path.write_bytes(content)
    with pytest.raises(InputError, match="not a usable evidence store") as caught:
        EvidenceStore(path)
    assert str(path) in str(caught.value)


def test_a_foreign_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE entries (id INTEGER)")
    with pytest.raises(InputError, match="not an evidence store"):
        EvidenceStore(path)


def test_a_link_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "target.sqlite"
    EvidenceStore(target).close()
    link = tmp_path / "link.sqlite"
    link.symlink_to(target)
    with pytest.raises(InputError, match="symbolic link"):
        EvidenceStore(link)


async def test_a_damaged_entry_is_a_miss_and_is_recorded_again(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "evidence.sqlite"
    store = EvidenceStore(path)
    await store.fetch("web", "q", produce, list[Hit])
    for damaged in ('{"not": "a list"', "[" * 50_000, '[{"url": 3}]'):
        store.put("web", "q", damaged)
        with caplog.at_level(logging.WARNING):
            again = await store.fetch("web", "q", produce, list[Hit])
        assert again == await produce()
        assert any(entry_key("web", "q") in r.getMessage() and str(path) in r.getMessage() for r in caplog.records)
        assert store.get("web", "q") is not None and "fresh" in str(store.get("web", "q"))
        caplog.clear()
    store.close()


async def test_replay_reports_a_damaged_entry_as_missing(tmp_path: Path) -> None:
    path = tmp_path / "evidence.sqlite"
    EvidenceStore(path).put("web", "q", "{torn")
    with pytest.raises(StoreMiss, match=entry_key("web", "q")):
        await EvidenceStore(path, "replay").fetch("web", "q", produce, list[Hit])


async def test_an_answer_that_repeats_a_key_is_stored_masked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A page summary from a model whose server echoes the key it got: the store never holds the key."""
    monkeypatch.setenv("SUMMARY_GATEWAY_API_KEY", "gw-STORESECRET-0123456789")
    store = EvidenceStore(tmp_path / "evidence.sqlite")

    async def echoed() -> list[Hit]:
        return [Hit(url="http://127.0.0.1/a", title="summary; echo: Authorization: Bearer gw-STORESECRET-0123456789")]

    await store.fetch("summary", "q", echoed, list[Hit])
    store.close()
    assert b"STORESECRET" not in (tmp_path / "evidence.sqlite").read_bytes()
    again = EvidenceStore(tmp_path / "evidence.sqlite", mode="replay")
    (hit,) = await again.fetch("summary", "q", produce, list[Hit])
    assert hit.title.startswith("summary; echo: Authorization: ") and hit.title.endswith("***")
