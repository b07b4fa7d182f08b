"""``m3d seats``: the seats of a configuration, which ``m3d debate --human-seat NAME`` can take."""

from __future__ import annotations

import typer
from rich.table import Table

from debates.cli.common import console
from debates.config_loader import available_configs, load_config
from m3d_agents.errors import InputError


def seat_lines(config_name: str) -> tuple[str, list[tuple[str, str, str]]]:
    """The configuration's title line and, per seat, its name, role and what it does."""
    loaded = load_config(config_name)
    seats = loaded.person_seats()
    if not seats:
        raise InputError("config", f"the {loaded.name} configuration ({loaded.strategy}) has no seats a person can take; "
                                   "seats belong to debate configurations (m3d seats async, m3d seats judged, ...)")
    rows = []
    for seat in seats:
        does = "answers with a label" if seat.answers else "argues without answering"
        if seat.stance:
            does += f"; defends: {seat.stance.replace('_', ' ')}"
        does += f"; at most {seat.most_turns} turns" if seat.most_turns != 1 else "; one turn"
        rows.append((seat.name, seat.role, does))
    title = f"{loaded.name}: {loaded.run_by()}, {len(seats)} seats"
    return title, rows


def seats(
    config: str = typer.Argument(..., help=f"A built-in configuration ({', '.join(available_configs())}) or a YAML path."),
) -> None:
    """List a configuration's seats: any of them can be taken with m3d debate --human-seat NAME."""
    title, rows = seat_lines(config)
    table = Table("seat", "role", "what it does", title=title, title_justify="left")
    for row in rows:
        table.add_row(*row)
    console.print(table)
    console.print(f"Take a seat: m3d debate --config {config} --human-seat {rows[0][0]} --text \"...\"", markup=False,
                  highlight=False, soft_wrap=True)
