"""The response cache stores data, never objects: a crafted entry cannot run code, and an unreadable
entry is a miss with a warning naming its file, never a failed call."""

from __future__ import annotations

import json
import logging
import pickle
import sqlite3
from pathlib import Path

import pytest
from autogen_core.models import CreateResult, UserMessage

from m3d_agents.backends.config import BackendConfig
from m3d_agents.backends.factory import build_backend
from m3d_agents.backends.metering import UsageLedger
from tests.support.openai_stub_server import StubOpenAIServer, completion_body

pytestmark = pytest.mark.filterwarnings("ignore:Resolved model mismatch")


class RunsCode:
    """What an attacker plants: unpickling it creates ``marker`` (a stand-in for any shell command)."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return exec, (f"open({str(self.marker)!r}, 'w').write('ran')",)


def counting() -> StubOpenAIServer:
    return StubOpenAIServer(lambda body, n: (200, completion_body(f"answer {n}"), 0.0))


async def ask(config: BackendConfig, question: str = "same question") -> CreateResult:
    backend = build_backend(config)
    try:
        return await backend.view(UsageLedger(), "a", "test").create([UserMessage(content=question, source="u")])
    finally:
        await backend.close()


def plant(store: Path, payload: bytes) -> int:
    """Put ``payload`` wherever the cache keeps its entries: in every value of an SQLite file, and in
    place of every other file. Returns how many places were overwritten."""
    planted = 0
    for path in sorted(p for p in store.rglob("*") if p.is_file()):
        if path.name.endswith(("-wal", "-shm", "-journal")):
            continue
        if path.read_bytes()[:16] == b"SQLite format 3\x00":
            with sqlite3.connect(path) as db:
                tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")]
                for table in tables:
                    columns = [r[1] for r in db.execute(f"PRAGMA table_info({table})")]
                    if "value" in columns and table != "Settings":
                        extra = ", mode = 4, filename = NULL" if {"mode", "filename"} <= set(columns) else ""
                        planted += db.execute(f"UPDATE {table} SET value = ?{extra}", (payload,)).rowcount
        else:
            path.write_bytes(payload)
            planted += 1
    return planted


async def test_a_crafted_pickle_entry_is_never_executed(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    marker = tmp_path / "pwned"
    with counting() as server:
        config = BackendConfig(kind="vllm", base_url=server.base_url, cache_dir=tmp_path / "responses")
        assert (await ask(config)).content == "answer 1"
        assert plant(tmp_path / "responses", pickle.dumps(RunsCode(marker))) >= 1
        with caplog.at_level(logging.WARNING):
            again = await ask(config)
    assert not marker.exists(), "reading the cache ran the planted code"
    assert again.content == "answer 2" and not again.cached, "the planted entry was a miss; the model was asked again"
    assert len(server.requests) == 2
    assert any("unreadable entry" in r.getMessage() and str(tmp_path / "responses") in r.getMessage() for r in caplog.records)


async def test_entries_are_json_data_with_keys_masked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that echoes the key into its answer: the stored entry is JSON and holds no key."""
    secret = "sk-live-ECHOEDSECRET0123456789"
    monkeypatch.setenv("M3D_VLLM_API_KEY", secret)
    echo = StubOpenAIServer(lambda body, n: (200, completion_body(f"your key is {secret}"), 0.0))
    with echo as server:
        config = BackendConfig(kind="vllm", base_url=server.base_url, cache_dir=tmp_path / "responses")
        await ask(config)
        replayed = await ask(config)
    files = [p for p in (tmp_path / "responses").rglob("*") if p.is_file()]
    assert files and all(p.suffix == ".json" for p in files)
    for path in files:
        entry = json.loads(path.read_text())
        assert entry["format"] == "m3d-response/1"
        assert secret not in path.read_text()
    assert replayed.cached and secret not in str(replayed.content) and "***" in str(replayed.content)


@pytest.mark.parametrize("damage", ["truncated", "not-json", "wrong-shape", "deep", "folder", "link", "empty-list"])
async def test_an_unreadable_entry_is_a_miss_naming_its_file(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: str
) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("not the cache's")
    with counting() as server:
        config = BackendConfig(kind="vllm", base_url=server.base_url, cache_dir=tmp_path / "responses")
        await ask(config)
        [entry] = [p for p in (tmp_path / "responses").rglob("*.json")]
        text = entry.read_text()
        if damage == "truncated":
            entry.write_text(text[: len(text) // 2])
        elif damage == "not-json":
            entry.write_bytes(b"\x80\x04\x95 binary")
        elif damage == "wrong-shape":
            entry.write_text(json.dumps({"format": "m3d-response/1", "results": [{"content": 3}]}))
        elif damage == "deep":
            entry.write_text("[" * 100_000 + "]" * 100_000)
        elif damage == "folder":
            entry.unlink()
            entry.mkdir()
        elif damage == "link":
            entry.unlink()
            entry.symlink_to(target)
        elif damage == "empty-list":
            entry.write_text(json.dumps({"format": "m3d-response/1", "results": []}))
        with caplog.at_level(logging.WARNING):
            again = await ask(config)
    assert again.content == "answer 2" and not again.cached
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any(str(entry) in w for w in warnings), warnings
    assert target.read_text() == "not the cache's", "the cache wrote through a link"


async def test_a_cache_folder_that_cannot_be_written_costs_the_cache_only(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with counting() as server:
        config = BackendConfig(kind="vllm", base_url=server.base_url, cache_dir=tmp_path / "responses")
        (tmp_path / "responses").mkdir()
        (tmp_path / "responses" / config.fingerprint()).write_text("a file where the store's folder goes")
        with caplog.at_level(logging.WARNING):
            first = await ask(config)
            second = await ask(config)
    assert (first.content, second.content) == ("answer 1", "answer 2")
    assert any("could not store" in r.getMessage() for r in caplog.records)
