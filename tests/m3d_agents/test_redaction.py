"""Redaction: known key values and credential-shaped text are masked wherever errors become text."""

from __future__ import annotations

import logging
import sys

import pytest

from m3d_agents.redaction import RedactingFormatter, redact, redact_data, register_secret_env


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
