"""Redaction: known key values and credential-shaped text are masked wherever errors become text."""

from __future__ import annotations

import logging
import sys

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from m3d_agents.redaction import _FOLD, _SHAPES, MASK, RedactingFormatter, folded, redact, redact_data, register_secret_env


@pytest.mark.parametrize(
    "text, secret",
    [
        ("refused 'https://serpapi.com/search.json?engine=google_lens&api_key=serp-abc123&url=x'", "serp-abc123"),
        ("Incorrect API key provided: Bearer sk-proj-abcdefghijklmnop", "sk-proj-abcdefghijklmnop"),
        ('{"Authorization": "Bearer tok_abcdefgh"}', "tok_abcdefgh"),
        ("headers: X-API-KEY: serper-zzzzzzzz", "serper-zzzzzzzz"),
        ("x-goog-api-key=AIzaSyA-1234567890abcdefghijklmnopqrstu", "AIzaSyA-1234567890abcdefghijklmnopqrstu"),
        ("proxy at http://user:hunter2hunter2@gpu-box:8000/v1 refused", "hunter2hunter2"),
        ("key sk-test-abcdefghijklmnop in the middle", "sk-test-abcdefghijklmnop"),
    ],
)
def test_credential_shapes_are_masked(text: str, secret: str) -> None:
    assert secret not in redact(text) and "***" in redact(text)


def test_values_of_secret_variables_are_masked_whatever_their_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOME_SERVICE_TOKEN", "plainvalue-1234")
    monkeypatch.setenv("GATEWAY_FOR_MODELS", "gatewayvalue-5678")
    assert redact("got plainvalue-1234") == "got ***"
    assert "gatewayvalue-5678" in redact("got gatewayvalue-5678"), "not known as a key until a config names it"
    register_secret_env("GATEWAY_FOR_MODELS")
    assert redact("got gatewayvalue-5678") == "got ***"


def test_ordinary_text_is_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("M3D_VLLM_API_KEY", "EMPTY")
    for text in ("images[0]: file x.jpg does not exist", "max tokens 512; token limit", "EMPTY answer", "monkey=banana"):
        assert redact(text) == text


def test_nested_data_is_redacted_and_stays_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-DATASECRET123")
    data = {"error": {"message": 'echo "sk-test-DATASECRET123" \\ end'}, "turns": ['api_key=abc\\"def', 3, None]}
    clean = redact_data(data)
    assert "DATASECRET" not in str(clean) and clean["turns"][1:] == [3, None]


def test_log_records_are_redacted_and_one_line_without_debug(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-LOGSECRET1234")
    try:
        raise RuntimeError("the server said: bad key sk-test-LOGSECRET1234")
    except RuntimeError:
        record = logging.LogRecord("x", logging.ERROR, __file__, 1, "failed with %s", ("sk-test-LOGSECRET1234",), sys.exc_info())
    short = RedactingFormatter("%(message)s", with_traceback=False).format(record)
    full = RedactingFormatter("%(message)s").format(record)
    assert short == "failed with ***"
    assert "Traceback" in full and "LOGSECRET" not in full


def test_the_fold_knows_every_character_a_case_insensitive_pattern_takes_for_an_ascii_letter() -> None:
    letter = re.compile("[a-z]", re.IGNORECASE)
    taken = {c for c in range(128, 0x110000) if letter.fullmatch(chr(c))}
    assert taken == set(_FOLD), "the clues of a shape could miss text that the shape matches"
    lowered = {c for c in range(128, 0x110000) if c not in _FOLD and re.search("[a-z]", chr(c).lower())}
    assert not lowered, "lower-casing would make an ASCII letter that no pattern reads"


def every_shape(text: str) -> str:
    """Redaction by shape as it was before the clues: every pattern over every text."""
    for pattern, replacement, _ in _SHAPES:
        text = pattern.sub(replacement, text)
    return text


PIECES = ["Bearer", "bEaReR", "BEARER", "\u0130", "\u0131", "\u017f", "\u212a", "authorization", "AUTHORİZATİON",
          "Proxy-Authorization", "x-api-key", "X-Goog-Api-Key", "api_key", "apı-key", "APIKEY", "x-auth-token", "Cookie",
          "cooKie", "token", "paſſword", "sig", "=", ":", ": ", "\"", "'", "?", "&", ";", "://", "https", "@", "user",
          "sk-", "AIza", "aiza", "***", " ", "\n", "abcdefghijklmnop", "0123456789", "-", "_", ".", "/", "é", "ß", "Straße"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=14))
def test_a_text_without_a_shapes_clue_is_redacted_as_if_searched(pieces: list[str]) -> None:
    text = "".join(pieces)
    assert redact(text, secrets=[]) == every_shape(text)


def test_clues_are_looked_for_as_the_patterns_read_case() -> None:
    assert folded("AUTHORİZATİON: Bearer X") == "authorization: bearer x"
    assert redact("AUTHORİZATİON: abcdefgh", secrets=[]) == f"AUTHORİZATİON: {MASK}"
    assert redact("\u212aey sk-abcdefghijklmnop", secrets=[]) == f"\u212aey {MASK}"
