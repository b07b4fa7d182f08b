"""The documentation: the README stays short and its commands name what exists, every paper's page
shows the departures of every configuration named after that paper, and the pages the site
generates from the code say what the code holds.

The site itself is built with ``mkdocs build --strict`` (``scripts/test.sh``), which fails on a broken
link or anchor; these tests hold what a link checker cannot: that the generated tables are complete
and that a command in the README names a configuration, a table, a file and a data set kind that exist.
"""

from __future__ import annotations

import importlib.util
import re
import shlex
from pathlib import Path
from types import ModuleType

import pytest

from debates.debate_engine.config import DebateConfig
from debates.config_loader import builtin_config_names, load_config
from debates.eval.papers.paper_tables import table_names
from m3d_agents.datasets import DATASETS
from tests.support.paths import REPO

README = REPO / "README.md"
SYSTEM_PAGES = {
    "LLM-Consensus": "llm-consensus.md", "AgentM3D": "agentm3d.md", "T2Agent": "t2agent.md",
    "AgentFact": "agentfact.md", "FactGuard": "factguard.md",
}


def hook() -> ModuleType:
    pytest.importorskip("mkdocs", reason="the docs extra (mkdocs) is not installed")
    spec = importlib.util.spec_from_file_location("docs_reference_hook", REPO / "docs" / "hooks" / "reference.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def readme_commands() -> list[list[str]]:
    """Every command of the README's bash blocks, continuation lines joined, comments dropped."""
    blocks = re.findall(r"```bash\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    commands = []
    for block in blocks:
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            words = shlex.split(line.replace("$(cat examples/sample.txt)", "TEXT"), comments=True)
            if words:
                commands.append(words)
    return commands


def option(words: list[str], name: str) -> str | None:
    return words[words.index(name) + 1] if name in words else None


def test_the_readme_is_short_and_links_only_to_pages_that_exist() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    links = re.findall(r"\]\(((?:docs|examples)/[^)#]+)", text)
    assert links
    missing = [link for link in links if not (REPO / link).is_file()]
    assert missing == []


def test_the_readme_commands_name_configurations_tables_files_and_kinds_that_exist() -> None:
    commands = readme_commands()
    scripts = [c[1] for c in commands if c[0] == "bash"]
    assert scripts and all((REPO / s).is_file() for s in scripts)
    m3d = [c for c in commands if c[0] == "m3d"]
    assert {c[1] for c in m3d} >= {"check", "debate", "reproduce"}
    for words in m3d:
        if (config := option(words, "--config")) is not None:
            assert config in builtin_config_names(), words
        if words[1] == "reproduce":
            assert words[2] in table_names(), words
        for flag in ("--image", "--video"):
            if (path := option(words, flag)) is not None:
                assert (REPO / path).is_file(), words
        if (dataset := option(words, "--dataset")) is not None:
            kind, _, path = dataset.partition(":")
            assert kind in DATASETS and (REPO / path).is_file(), words
        for value in [w for i, w in enumerate(words) if i and words[i - 1] == "-o"]:
            key, _, path = value.partition("=")
            assert (REPO / path).exists(), (key, words)
        if (seat := option(words, "--human-seat")) is not None:
            loaded = load_config(option(words, "--config") or "check")
            assert isinstance(loaded, DebateConfig) and seat in [s.name for s in loaded.seats]


def test_every_configuration_named_after_a_paper_shows_its_departures_on_the_papers_page() -> None:
    for name in builtin_config_names():
        paper = load_config(name).paper
        if paper is None:
            continue
        page = (REPO / "docs" / "systems" / SYSTEM_PAGES[paper]).read_text(encoding="utf-8")
        markers = re.findall(r"<!--\s*departures:\s*([^>]*?)\s*-->", page)
        listed = {n.strip() for marker in markers for n in marker.split(",")}
        assert name in listed, f"{name} ({paper}) is missing from the departures of systems/{SYSTEM_PAGES[paper]}"


def test_the_departures_table_holds_every_departure_a_configuration_lists() -> None:
    table = hook().departures_table(["t2agent", "check"])
    for departure in load_config("t2agent").departures:
        assert f"`{departure.id}`" in table
        assert departure.paper_line in table
    assert "*(only a run whose leakage filter is on)*" in table
    assert "`check`" not in table


def test_the_seats_table_names_each_debates_seats_and_the_configurations_without_one() -> None:
    table = hook().seats_table()
    assert "| `judged` | `prosecutor` (debater), `defender` (debater), `judge` (judge) |" in table
    assert "| `async` | `agent_a` (debater), `agent_b` (debater) |" in table
    without = table.split("No seat a person can take:")[1]
    assert "`t2agent` (t2agent)" in without and "`factguard` (factguard)" in without
    assert "`async`" not in without


def test_the_paper_tables_page_lists_every_table_with_its_rows() -> None:
    page = hook().tables_page()
    for name in table_names():
        assert f"## {name}\n" in page
    assert "| T2Agent | `t2agent-amg` | GPT-4o |" in page
    assert "| MMD-Agent | `mmd-agent-amg` | GPT-4o |" in page
    assert "| GPT-4o (zero-shot) | not run (no configuration) | GPT-4o |" in page


def test_the_data_set_table_lists_every_kind_with_its_own_options() -> None:
    table = hook().datasets_table()
    for name in DATASETS.names():
        assert f"| `{name}` |" in table
    assert "`visualnews`" in table.split("| `newsclippings` |")[1].split("\n")[0]


def test_every_page_in_the_navigation_exists_or_is_generated() -> None:
    nav = re.findall(r":\s*([\w/-]+\.md)\s*$|^\s*-\s*([\w/-]+\.md)\s*$", (REPO / "mkdocs.yml").read_text(), re.M)
    pages = [a or b for a, b in nav]
    generated = set(hook().GENERATED)
    assert pages and all((REPO / "docs" / p).is_file() or p in generated for p in pages), pages
    assert Path(REPO / "docs" / "guides" / "reproduce-in-five-minutes.md").is_file()


def test_the_generated_cli_reference_names_the_command_as_a_user_types_it() -> None:
    page = hook()._invoke("check", "--help")
    assert "Usage: m3d check" in page and "root" not in page


def test_the_readme_reproduces_into_the_folder_the_five_minute_guide_compares() -> None:
    (reproduce,) = [c for c in readme_commands() if c[:2] == ["m3d", "reproduce"]]
    guide = (REPO / "docs" / "guides" / "reproduce-in-five-minutes.md").read_text(encoding="utf-8")
    table, out = reproduce[2], option(reproduce, "--out")
    assert f"m3d reproduce {table} " in guide and f"--out {out} " in guide
    assert f"m3d compare {out}/async " in guide


def test_the_backends_page_gives_the_vllm_address_the_code_uses_without_one() -> None:
    import os

    from m3d_agents.backends.config import BackendSettings
    from m3d_agents.backends.kinds import BACKEND_KINDS

    default = BACKEND_KINDS.get("vllm").default_base_url
    saved = os.environ.pop("M3D_VLLM_BASE_URL", None)
    try:
        assert BackendSettings().get("vllm").endpoint() == default
    finally:
        if saved is not None:
            os.environ["M3D_VLLM_BASE_URL"] = saved
    page = (REPO / "docs" / "getting-started" / "backends.md").read_text(encoding="utf-8")
    assert f"`{default}`" in page


def test_the_vllm_guide_gives_the_gpu_command_with_its_context_structured_outputs_and_chunked_prefill() -> None:
    guide = (REPO / "docs" / "guides" / "vllm-cpu.md").read_text(encoding="utf-8")
    command = guide.split("## On a GPU: Qwen3-VL-8B-Instruct")[1].split("```bash")[1].split("```")[0]
    assert "vllm serve Qwen/Qwen3-VL-8B-Instruct" in command and "--max-model-len" in command
    assert "--structured-outputs-config" in command and "xgrammar" in command
    assert "Chunked prefill: left on" in guide
