"""What the web page refuses, decided without a server: paths out of the run roots, exposed binds, secrets in text."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from debates.cli.serve import TOKEN_VARIABLE, _token
from debates.ui.web.errors import PageError
from debates.ui.web.live import person_message
from debates.ui.web.security import (
    find_runs,
    host_name,
    is_loopback,
    read_member_bytes,
    resolve_run_ref,
    same_origin,
)
from debates.ui.web.settings import WebSettings
from debates.debate_engine.reading import read_message
from m3d_agents.backends.factory import BackendPool
from m3d_agents.errors import InputError
from m3d_agents.labels import get_taxonomy
from m3d_agents.redaction import redact


@pytest.fixture
def roots(tmp_path: Path) -> list[Path]:
    root = tmp_path / "runs"
    (root / "a" / "run1").mkdir(parents=True)
    (root / "a" / "run1" / "run.json").write_text("{}")
    (root / "a" / "run1" / "confusion.png").write_bytes(b"\x89PNG")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "run.json").write_text("{}")
    (outside / "secret.png").write_bytes(b"secret")
    (root / "escape").symlink_to(outside)
    (root / "inside").symlink_to(root / "a")
    (root / "a" / "run1" / "leak.png").symlink_to(outside / "secret.png")
    return [root]


@pytest.mark.parametrize("ref, status, words", [
    ("0/../outside", 403, "'..' in a run path"),
    ("0/a/../../outside", 403, "'..' in a run path"),
    ("0//etc", 403, "never by an absolute path"),
    ("0/escape", 403, "symbolic link that leads out"),
    ("1/a", 404, "number of a run root"),
    ("/etc", 404, "number of a run root"),
    ("0/a/nothing", 404, "no folder"),
    ("0/a\\..\\..", 400, "character"),
    ("0/a\x00", 400, "character"),
])
def test_run_paths_that_leave_the_roots_are_refused(roots: list[Path], ref: str, status: int, words: str) -> None:
    with pytest.raises(PageError) as refused:
        resolve_run_ref(roots, ref)
    assert refused.value.status == status and words in refused.value.message


def test_folders_under_a_root_open_and_links_that_stay_inside_are_allowed(roots: list[Path]) -> None:
    assert resolve_run_ref(roots, "0/a/run1") == (roots[0] / "a" / "run1").resolve()
    assert resolve_run_ref(roots, "0/inside/run1") == (roots[0] / "a" / "run1").resolve()
    assert [ref for ref, _ in find_runs(roots)] == ["0/a/run1", "0/inside/run1"]  # escape is not listed


def test_a_run_file_that_links_out_of_its_folder_is_refused(roots: list[Path]) -> None:
    run = resolve_run_ref(roots, "0/a/run1")
    assert read_member_bytes(run, "confusion.png") == b"\x89PNG"
    with pytest.raises(PageError, match="symbolic link out of the run folder"):
        read_member_bytes(run, "leak.png")
    with pytest.raises(PageError, match="not the name of a file"):
        read_member_bytes(run, "../../outside/secret.png")


@pytest.mark.parametrize("host, loopback", [
    ("127.0.0.1", True), ("127.9.9.9", True), ("::1", True), ("[::1]", True), ("localhost", True), ("LOCALHOST", True),
    ("0.0.0.0", False), ("::", False), ("10.0.0.1", False), ("example.org", False), ("localhost.example.org", False),
])
def test_which_binds_are_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback


def test_hosts_and_origins_are_compared_with_their_ports() -> None:
    assert host_name("127.0.0.1:8765") == "127.0.0.1" and host_name("[::1]:80") == "::1" and host_name("localhost") == "localhost"
    assert same_origin("http://127.0.0.1:8765", "127.0.0.1:8765")
    assert not same_origin("http://127.0.0.1:9999", "127.0.0.1:8765")
    assert not same_origin("http://evil.example", "127.0.0.1:8765") and not same_origin("null", "127.0.0.1:8765")


def settings(**changes: object) -> WebSettings:
    base = WebSettings(pool_factory=BackendPool, backends=["local"], default_backend="local")
    for key, value in changes.items():
        setattr(base, key, value)
    return base


def test_any_bind_beyond_loopback_needs_a_long_enough_token() -> None:
    settings().check()
    with pytest.raises(InputError, match="0.0.0.0 is not a loopback address: set a token"):
        settings(host="0.0.0.0").check()
    with pytest.raises(InputError, match="at least 16 characters"):
        settings(host="0.0.0.0", token="short").check()
    settings(host="0.0.0.0", token="x" * 24).check()


def test_serve_takes_the_token_from_the_environment_or_writes_a_new_one_to_a_private_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(TOKEN_VARIABLE, raising=False)
    assert _token("127.0.0.1", tmp_path / "t")[0] is None and not (tmp_path / "t").exists()
    token, how = _token("0.0.0.0", tmp_path / "t")
    assert token and len(token) >= 16 and token not in how
    assert (tmp_path / "t").read_text().strip() == token and (tmp_path / "t").stat().st_mode & 0o777 == 0o600
    monkeypatch.setenv(TOKEN_VARIABLE, "from-the-environment-123")
    assert _token("0.0.0.0", tmp_path / "u") == ("from-the-environment-123", f"the token is the value of {TOKEN_VARIABLE}")


def test_secrets_are_redacted_from_anything_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-SECRET123456")
    monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-ENVSECRET789")
    text = ("401 from proxy: Authorization: Bearer abc.def-ghi123 was refused; key sk-test-SECRET123456, "
            "url https://serpapi.com/search.json?q=x&api_key=serp-SECRET456&hl=en, tok-ENVSECRET789, server-token-XYZ")
    shown = redact(text, extra=("server-token-XYZ",))
    for secret in ("abc.def-ghi123", "sk-test-SECRET123456", "serp-SECRET456", "tok-ENVSECRET789", "server-token-XYZ"):
        assert secret not in shown
    assert "Authorization: ***" in shown and "api_key=***&hl=en" in shown and "401 from proxy" in shown
    assert os.environ["OPENAI_API_KEY"] == "sk-test-SECRET123456"


def test_a_persons_answer_is_read_by_the_same_parser_as_an_agents() -> None:
    reading = read_message(person_message("The light falls from two sides.", "fake", 90), get_taxonomy("binary"))
    assert (reading.label, reading.confidence, reading.error) == ("fake", 0.9, None)
    argued = read_message(person_message("Only an argument.", "", 50), get_taxonomy("binary"))
    assert argued.label is None and argued.error
