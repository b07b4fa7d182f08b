"""Tables and notes for terminals of any width and for pipes: nothing is ever cut.

A wide table squeezed into 80 columns (a pipe's width) has its numbers cut to ``0.…``. So the
figures of several runs are laid out one figure per row and one run per column, under a short
name (A, B, ...) that a legend resolves, and every cell folds onto the next line rather than
being cut. The same rows give the Markdown that ``m3d compare --out`` writes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from rich.console import Console
from rich.table import Table
from rich.text import Text

from debates.cli.common import console, err_console

if TYPE_CHECKING:
    from debates.eval.score.caveats import Caveat


def print_caveats(caveats: Sequence[Caveat], to: Console = err_console) -> None:
    """Each caveat as a warning (on stderr, so a pipe of the figures stays clean): wrapped at words on a terminal,
    one whole line in a pipe or a log."""
    for caveat in caveats:
        to.print(Text.assemble(("warning:", "bold yellow"), " ", caveat.text), soft_wrap=not to.is_terminal)


def print_warnings(lines: Sequence[str], to: Console = err_console) -> None:
    """Each line as one warning on stderr (a damaged neighbouring run that was left out, ...)."""
    for line in lines:
        to.print(Text.assemble(("warning:", "bold yellow"), " ", line), soft_wrap=True)


def print_note(line: str) -> None:
    """A run's remark for the user (how many samples, what the loader left out), on stderr: whole in a pipe."""
    err_console.print(line, style="dim", markup=False, highlight=False, soft_wrap=not err_console.is_terminal)


def run_letters(count: int) -> list[str]:
    return [chr(ord("A") + i) if i < 26 else f"R{i + 1}" for i in range(count)]


def figure_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> Table:
    """A table whose cells fold instead of being cut, whatever the width."""
    table = Table(title=title, title_justify="left", show_lines=False, expand=False)
    for i, column in enumerate(columns):
        table.add_column(column, overflow="fold", justify="left" if i == 0 else "right")
    for row in rows:
        table.add_row(*row)
    return table


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]], to: Console = console) -> None:
    to.print(figure_table(title, columns, rows))


def print_fitting(columns: Sequence[str], rows: Sequence[Sequence[str]], to: Console = console) -> None:
    """A table where it fits the width (a terminal's, or 80 columns in a pipe); otherwise one block per row, a
    ``column: value`` line per cell, so that no cell is cut whatever the width."""
    from rich.measure import Measurement

    table = Table(*columns, show_lines=False)
    for row in rows:
        table.add_row(*row)
    if Measurement.get(to, to.options.update_width(100_000), table).maximum <= to.width:
        to.print(table)
        return
    for row in rows:
        title, *rest = row
        to.print(Text(title, style="bold"), soft_wrap=True)
        for column, cell in zip(columns[1:], rest):
            if cell.strip():
                to.print(Text(f"  {column}: {' '.join(cell.split())}"), soft_wrap=True)


def markdown_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    def cell(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", "<br>")

    return ["| " + " | ".join(cell(c) for c in columns) + " |", "|" + "---|" * len(columns),
            *["| " + " | ".join(cell(c) for c in row) + " |" for row in rows]]
