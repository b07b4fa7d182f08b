"""Generates the reference pages of the documentation site from the code, so they never drift.

mkdocs runs this hook at build time (``hooks:`` in ``mkdocs.yml``):

- ``reference/configurations.md``: every built-in configuration's fields, from ``m3d config NAME --json``;
- ``reference/cli.md``: every command's ``--help``;
- ``reference/run-folder.md``: the files of a run folder and the fields of ``run.json`` and ``results.jsonl``;
- ``reference/verdict.md``: the ``Verdict`` and its parts, from their pydantic fields and docstrings;
- ``reference/layout.md``: every package and module with the first sentence of its docstring;
- ``reference/tables.md``: every paper table ``m3d reproduce`` knows, from its data file;
- on any page, ``<!-- departures: NAME, NAME -->`` becomes the departures those configurations list,
  ``<!-- seats -->`` the seats of every built-in configuration (the names ``--human-seat`` takes), and
  ``<!-- paper-tables -->`` one line per paper table: its rows and the configurations that run them, and
  ``<!-- datasets -->`` every data set kind with its loader options.

Hand-kept lists of configurations, seats or tables drift as the code moves; these are read from the
code at every build, and ``mkdocs build --strict`` fails when one cannot be.
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

    result = CliRunner().invoke(app, list(args), prog_name="m3d", env={"COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"})
    if result.exit_code != 0:
        raise RuntimeError(f"m3d {' '.join(args)} failed while building the docs: {result.output}")
    return result.output


def configurations_page() -> str:
    _import_path()
    from debates.config_loader import builtin_config_names, load_config
    from m3d_agents.backends.config import BackendConfig, BackendSettings, LocalServerSettings, ToolBinding

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
    lines += ["", "## Backend config files", "",
              "A config file (`--config-file`, `M3D_CONFIG`, `./m3d.yaml` or `~/.config/m3d/config.yaml`) holds "
              "these settings; each backend under `backends:` takes the settings of `BackendConfig`, and a tool "
              "under `tools:` those of `ToolBinding`."]
    for model in (BackendSettings, BackendConfig, LocalServerSettings, ToolBinding):
        lines += ["", f"### {model.__name__}", "", _doc(model), "", *_field_table(model)]
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


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        try:
            value = field.default_factory()
        except TypeError:
            return "computed"
        return f"`{_cell(json.dumps(value.model_dump(mode='json') if hasattr(value, 'model_dump') else value, default=str))}`"
    return f"`{_cell(json.dumps(field.default, default=str))}`"


def _field_table(model: Any) -> list[str]:
    lines = ["| field | type | default | description |", "|---|---|---|---|"]
    for name, field in model.model_fields.items():
        annotation = getattr(field.annotation, "__name__", None) or str(field.annotation).replace("typing.", "")
        lines.append(f"| `{name}` | {_cell(annotation)} | {_default(field)} | {_cell(field.description or '')} |")
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


def _table_rows(table: Any) -> str:
    mapped: dict[str, list[str]] = {}
    for row in table.rows:
        mapped.setdefault(row.label, [])
        target = f"`{row.config}`" if row.config else "no configuration"
        if target not in mapped[row.label]:
            mapped[row.label].append(target)
    return "; ".join(f"{label} → {', '.join(targets)}" for label, targets in mapped.items())


def _table_datasets(table: Any) -> str:
    parts = []
    for kind, setting in table.datasets.items():
        said = [setting.split or "split not stated"]
        if setting.samples:
            said.append(f"{setting.samples:,} samples")
        parts.append(f"{kind} ({', '.join(said)})")
    return "; ".join(parts)


def paper_tables_summary() -> str:
    _import_path()
    from debates.eval.papers.paper_tables import all_tables

    lines = ["| table | paper rows → our configurations | data set (split, samples the paper scored) |", "|---|---|---|"]
    for table in all_tables():
        lines.append(f"| [`{table.id}`](../reference/tables.md#{table.id}) | {_cell(_table_rows(table))} | "
                     f"{_cell(_table_datasets(table))} |")
    return "\n".join(lines)


def tables_page() -> str:
    _import_path()
    from debates.eval.papers.paper_tables import all_tables

    lines = ["# Paper tables", "",
             "Every table `m3d reproduce` knows, generated from its data file "
             "(`debates/eval/papers/tables/<table>.yaml`): where its numbers come from, the data it was scored on, "
             "each paper row with the configuration that runs it, and the notes that say what is assumed. "
             "`m3d reproduce --list` prints the same in a terminal.", ""]
    for table in all_tables():
        page = f"page {table.citation.page}" if table.citation.page else f"page not known ({table.citation.page_note})"
        lines += [f"## {table.id}", "", f"**{table.paper} {table.citation.table}**: {table.title}", "",
                  f"- paper: {table.paper_title}; {page}",
                  f"- numbers from: {table.citation.source}",
                  f"- data: {_table_datasets(table)}; metrics: {', '.join(table.metrics)} ({table.scale})"]
        if table.backbone:
            lines.append(f"- the paper's backbone: {table.backbone}")
        lines += ["", "| paper row | configuration | paper's backbone |", "|---|---|---|"]
        for row in table.rows:
            config = f"`{row.config}`" if row.config else "not run (no configuration)"
            lines.append(f"| {_cell(row.label)} | {config} | {_cell(row.backbone or '')} |")
        if table.notes:
            lines += ["", *[f"- {_cell(note)}" for note in table.notes]]
        lines.append("")
    return "\n".join(lines) + "\n"


def datasets_table() -> str:
    _import_path()
    from m3d_agents.datasets import DATASETS
    from m3d_agents.datasets.base import LoaderOptions

    shared = set(LoaderOptions.model_fields)
    lines = ["| kind | what | its own options (`-o key=value`) |", "|---|---|---|"]
    for name in DATASETS.names():
        kind = DATASETS.get(name)
        own = [f"`{key}`" for key in kind.options.model_fields if key not in shared]
        lines.append(f"| `{name}` | {_cell(kind.summary)} | {', '.join(own) or 'none'} |")
    lines += ["", "Every kind also takes " + ", ".join(f"`{key}`" for key in LoaderOptions.model_fields) + "."]
    return "\n".join(lines)


def seats_table() -> str:
    _import_path()
    from debates.config_loader import builtin_config_names, load_config

    lines = ["| configuration | seats (role) |", "|---|---|"]
    without = []
    for name in builtin_config_names():
        config = load_config(name)
        if config.person_seats():
            seats = ", ".join(f"`{s.name}` ({s.role})" for s in config.person_seats())
            lines.append(f"| `{name}` | {seats} |")
        else:
            without.append(f"`{name}` ({config.strategy})")
    lines += ["", f"No seat a person can take: {', '.join(without)}."]
    return "\n".join(lines)


GENERATED = {
    "reference/configurations.md": configurations_page,
    "reference/cli.md": cli_page,
    "reference/run-folder.md": run_folder_page,
    "reference/verdict.md": verdict_page,
    "reference/layout.md": layout_page,
    "reference/tables.md": tables_page,
}


def on_files(files: Files, config: Any) -> Files:
    os.environ.setdefault("M3D_CACHE_DIR", str(ROOT / ".cache" / "docs"))
    for path, build in GENERATED.items():
        existing = files.get_file_from_path(path)
        if existing is not None:
            files.remove(existing)
        files.append(File.generated(config, path, content=build()))
    return files


WHEN = {
    "no_evidence": "only a run that gathers no evidence",
    "leakage_filter": "only a run whose leakage filter is on",
    "fused_forgery": "only a run whose image critic reads the fused CPU forensics",
    "learned_forgery": "only a run whose image critic reads a learned detector",
}
"""How the departures table says when a departure holds, for each ``when`` other than ``always``."""


def departures_table(names: list[str]) -> str:
    _import_path()
    from debates.config_loader import load_config

    lines = ["| configuration | id | how it departs | paper line |", "|---|---|---|---|"]
    for name in names:
        config = load_config(name)
        for d in getattr(config, "departures", None) or []:
            when = "" if d.when == "always" else f" *({WHEN.get(d.when, d.when.replace('_', ' '))})*"
            lines.append(f"| `{name}` | `{d.id}` | {_cell(d.text)}{when} | {d.paper_line} |")
    if len(lines) == 2:
        lines.append("| | | none listed | |")
    return "\n".join(lines)


def on_page_markdown(markdown: str, page: Any, config: Any, files: Files) -> str:
    import re

    def replace(match: re.Match[str]) -> str:
        return departures_table([n.strip() for n in match.group(1).split(",") if n.strip()])

    markdown = re.sub(r"<!--\s*departures:\s*([^>]*?)\s*-->", replace, markdown)
    markdown = re.sub(r"<!--\s*seats\s*-->", lambda _: seats_table(), markdown)
    markdown = re.sub(r"<!--\s*datasets\s*-->", lambda _: datasets_table(), markdown)
    return re.sub(r"<!--\s*paper-tables\s*-->", lambda _: paper_tables_summary(), markdown)
