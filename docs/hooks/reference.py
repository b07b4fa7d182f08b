"""Generates the reference pages of the documentation site from the code, so they never drift.

mkdocs runs this hook at build time (``hooks:`` in ``mkdocs.yml``):

- ``reference/configurations.md``: every built-in configuration's fields, from ``m3d config NAME --json``;
- ``reference/cli.md``: every command's ``--help``;
- ``reference/run-folder.md``: the files of a run folder and the fields of ``run.json`` and ``results.jsonl``;
- ``reference/verdict.md``: the ``Verdict`` and its parts, from their pydantic fields and docstrings;
- ``reference/layout.md``: every package and module with the first sentence of its docstring;
- on any page, ``<!-- departures: NAME, NAME -->`` becomes the departures those configurations list.
"""

from __future__ import annotations

import ast
import inspect
import json
import os
import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("m3d_agents", "debates", "retrieval", "prompts")


def _import_path() -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ").strip()


def _invoke(*args: str) -> str:
    _import_path()
    from typer.testing import CliRunner

    from debates.cli.main import app

    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"})
    if result.exit_code != 0:
        raise RuntimeError(f"m3d {' '.join(args)} failed while building the docs: {result.output}")
    return result.output


def configurations_page() -> str:
    _import_path()
    from debates.config_loader import builtin_config_names, load_config

    lines = ["# Configurations", "",
             "Every built-in configuration and every one of its settings, generated from the configuration models "
             "(`m3d config NAME` prints the same in a terminal; `--json` as data). A setting's value is what the "
             "configuration's YAML file gives it; a user's file may override any of them.", ""]
    names = builtin_config_names()
    lines += ["| configuration | strategy | what |", "|---|---|---|"]
    configs = {name: load_config(name) for name in names}
    for name, config in configs.items():
        lines.append(f"| [`{name}`](#{name}) | {config.strategy} | {_cell(config.description)} |")
    for name in names:
        fields = json.loads(_invoke("config", name, "--json"))
        lines += ["", f"## {name}", "", _cell(configs[name].description), "",
                  "| setting | type | default | value | description |", "|---|---|---|---|---|"]
        for f in fields:
            lines.append(
                f"| `{f['name']}` | {_cell(f['type'])} | {_cell(json.dumps(f['default']))} | "
                f"{_cell(json.dumps(f['value']))} | {_cell(f['description'])} |"
            )
    return "\n".join(lines) + "\n"


def _commands() -> list[list[str]]:
    _import_path()
    import typer

    from debates.cli.main import app

    group = typer.main.get_command(app)
    found: list[list[str]] = []
    for name, command in sorted(group.commands.items()):  # type: ignore[attr-defined]
        found.append([name])
        for sub in sorted(getattr(command, "commands", {}) or {}):
            found.append([name, sub])
    return found


def cli_page() -> str:
    lines = ["# Command line", "", "Every `m3d` command with its `--help`, generated from the command line itself.", "",
             "```text", _invoke("--help").rstrip(), "```"]
    for words in _commands():
        lines += ["", f"## m3d {' '.join(words)}", "", "```text", _invoke(*words, "--help").rstrip(), "```"]
    return "\n".join(lines) + "\n"


def _field_table(model: Any) -> list[str]:
    lines = ["| field | type | description |", "|---|---|---|"]
    for name, field in model.model_fields.items():
        annotation = getattr(field.annotation, "__name__", None) or str(field.annotation).replace("typing.", "")
        lines.append(f"| `{name}` | {_cell(annotation)} | {_cell(field.description or '')} |")
    return lines


def _doc(obj: Any) -> str:
    return inspect.cleandoc(obj.__doc__ or "")


def run_folder_page() -> str:
    _import_path()
    from debates.eval import records

    lines = ["# Run folders", "", _doc(records), "",
             f"A run folder holds `{records.MANIFEST}` (what the run is), `{records.RESULTS}` (one row per sample, "
             "appended as each finishes), and the files the report writes beside them.", "",
             f"## {records.MANIFEST}", "", _doc(records.RunManifest), "", *_field_table(records.RunManifest), "",
             f"## {records.RESULTS}", "", _doc(records.EvalRow), "", *_field_table(records.EvalRow)]
    return "\n".join(lines) + "\n"


def verdict_page() -> str:
    _import_path()
    from m3d_agents import verdict

    lines = ["# Verdict", "", _doc(verdict), ""]
    for name, obj in vars(verdict).items():
        if inspect.isclass(obj) and getattr(obj, "__module__", "") == verdict.__name__ and hasattr(obj, "model_fields"):
            lines += [f"## {name}", "", _doc(obj), "", *_field_table(obj), ""]
    lines += ["## In Python", "", "::: m3d_agents.verdict.Verdict", ""]
    return "\n".join(lines) + "\n"


def _first_sentence(docstring: str | None) -> str:
    if not docstring:
        return ""
    paragraph = inspect.cleandoc(docstring).split("\n\n")[0].replace("\n", " ")
    return paragraph


def layout_page() -> str:
    lines = ["# Layout", "",
             "Every package and module with the first paragraph of its docstring, generated from the code. "
             "`debates/` imports only downward: front-ends (`cli`, `ui`) over the harness (`eval.papers`, "
             "`eval.run`, `eval.score`, `eval.records`) over the strategies over the turn policies over the chat "
             "machinery over the kernel; `tests/test_layout.py` enforces it.", ""]
    for top in PACKAGES:
        lines += [f"## `{top}`", "", "| module | what |", "|---|---|"]
        for path in sorted((ROOT / top).rglob("*.py")):
            if "__pycache__" in path.parts:
                continue
            module = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            module = module.removesuffix(".__init__")
            text = _first_sentence(ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))))
            lines.append(f"| `{module}` | {_cell(text)} |")
        lines.append("")
    return "\n".join(lines) + "\n"


GENERATED = {
    "reference/configurations.md": configurations_page,
    "reference/cli.md": cli_page,
    "reference/run-folder.md": run_folder_page,
    "reference/verdict.md": verdict_page,
    "reference/layout.md": layout_page,
}


def on_files(files: Files, config: Any) -> Files:
    os.environ.setdefault("M3D_CACHE_DIR", str(ROOT / ".cache" / "docs"))
    for path, build in GENERATED.items():
        existing = files.get_file_from_path(path)
        if existing is not None:
            files.remove(existing)
        files.append(File.generated(config, path, content=build()))
    return files


def departures_table(names: list[str]) -> str:
    _import_path()
    from debates.config_loader import load_config

    lines = ["| configuration | id | how it departs | paper line |", "|---|---|---|---|"]
    for name in names:
        config = load_config(name)
        for d in getattr(config, "departures", None) or []:
            when = "" if d.when == "always" else f" (only {d.when.replace('_', ' ')})"
            lines.append(f"| `{name}` | `{d.id}` | {_cell(d.text)}{when} | {d.paper_line} |")
    if len(lines) == 2:
        lines.append("| | | none listed | |")
    return "\n".join(lines)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    import re

    def replace(match: re.Match[str]) -> str:
        return departures_table([n.strip() for n in match.group(1).split(",") if n.strip()])

    return re.sub(r"<!--\s*departures:\s*([^>]*?)\s*-->", replace, markdown)
