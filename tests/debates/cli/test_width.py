"""Eighty columns, in a terminal and in a pipe: what ``m3d`` prints wraps and is never cut (no ``…``, no ``...``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.openai_stub_server import StubOpenAIServer, completion_body
from tests.support.terminal import m3d_in_pipe, m3d_in_terminal

CUT = ("…", "...")


@pytest.fixture()
def backends_env(tmp_path: Path):  # type: ignore[no-untyped-def]
    with StubOpenAIServer(lambda body, n: (200, completion_body("ok"), 0.0)) as server:
        config = tmp_path / "m3d.yaml"
        config.write_text(f"backends:\n  a-vision-model-on-the-gpu-box: {{kind: vllm, base_url: '{server.base_url}', "
                          "model: Qwen/Qwen3-VL-8B-Instruct-with-a-long-name}\n")
        yield server, ["--config-file", str(config)], {"M3D_LOCAL_BASE_URL": server.base_url,
                                                        "M3D_VLLM_BASE_URL": server.base_url, "OPENAI_API_KEY": ""}


def shown_both_ways(args: list[str], env: dict[str, str] | None = None) -> list[str]:
    piped = m3d_in_pipe(args, env)
    assert piped.returncode == 0, piped.stderr
    return [piped.stdout, m3d_in_terminal(args, 80, env)]


def test_m3d_backends_prints_every_url_and_model_whole(backends_env) -> None:  # type: ignore[no-untyped-def]
    server, args, env = backends_env
    for shown in shown_both_ways(["backends", *args], env):
        assert not any(cut in shown for cut in CUT), shown
        assert server.base_url in shown and "Qwen/Qwen3-VL-8B-Instruct-with-a-long-name" in shown
        assert "a-vision-model-on-the-gpu-box" in shown and "no key in OPENAI_API_KEY" in shown


def test_m3d_config_wraps_every_description_within_80_columns() -> None:
    from debates.config_loader import available_configs, load_config

    judged = " ".join(load_config("judged").description.split())
    for shown in shown_both_ways(["config"]):
        lines = shown.splitlines()
        assert max(len(line) for line in lines) <= 80 and not any(line.endswith(CUT) for line in lines)
        assert judged in " ".join(" ".join(lines).split()), "the whole description, wrapped"
        assert {line.split()[0] for line in lines if line and not line.startswith(" ")} == set(available_configs())


def test_m3d_seats_and_the_help_fit_80_columns_without_a_cut() -> None:
    for args in (["seats", "judged"], ["--help"], ["check", "--help"]):
        for shown in shown_both_ways(args):
            assert max(len(line) for line in shown.splitlines()) <= 80, args
            assert "…" not in shown, (args, shown)
