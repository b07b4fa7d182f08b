"""``m3d config NAME``: every field of a configuration, with its type, default, value and description.

The rows come from :func:`m3d_agents.config_reference.config_fields`, the same walk the
documentation's reference page and the test for undocumented fields use. The text is plain (no
colours, no table borders) so it reads the same in a terminal, a pipe and a file.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from typing import Optional

import typer

from debates.config_loader import available_configs, load_config
from m3d_agents.config_reference import config_fields, render_text


def emit(text: str) -> None:
    """Write to stdout; a reader that stops early (``| head``) ends the output quietly, not with an error."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def describe_config(
    name: Optional[str] = typer.Argument(
        None, help=f"A built-in configuration or a YAML file; none lists the built-in ones. Built in: {', '.join(available_configs())}."
    ),
    as_json: bool = typer.Option(
        False, "--json", help="A JSON list of objects with the keys name, type, default, value and description."
    ),
) -> None:
    """Show every field of a configuration: dotted path, type, default, this configuration's value, description."""
    if name is None:
        listed = [load_config(n) for n in available_configs()]
        if as_json:
            emit(json.dumps([{"name": c.name, "strategy": c.strategy, "description": c.description} for c in listed],
                                        indent=2, ensure_ascii=False) + "\n")
            return
        width = max(len(c.name) for c in listed)
        columns = min(shutil.get_terminal_size((80, 24)).columns, 160) if sys.stdout.isatty() else 80
        side_by_side = columns - width - 2 >= 40
        indent = " " * (width + 2) if side_by_side else "    "
        for config in listed:
            # Wrapped under its own column, never cut: a description is what tells two configurations apart.
            text = f"{config.strategy}: {' '.join(config.description.split())}".rstrip(": ")
            lines = textwrap.wrap(text, width=columns - len(indent), break_long_words=False, break_on_hyphens=False)
            first = f"{config.name:<{width}}  " if side_by_side else f"{config.name}\n{indent}"
            emit(first + f"\n{indent}".join(lines or [""]) + "\n")
        return
    config = load_config(name)
    rows = config_fields(config)
    if as_json:
        emit(json.dumps([row.model_dump(mode="json") for row in rows], indent=2, ensure_ascii=False) + "\n")
        return
    width = min(shutil.get_terminal_size((80, 24)).columns, 120) if sys.stdout.isatty() else 80
    width = max(width, 60)
    header = textwrap.fill(f"{config.name} (strategy {config.strategy}): {config.description}".rstrip(": "), width=width)
    emit(header + "\n\n" + render_text(rows, width=width) + "\n")
