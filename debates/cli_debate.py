"""``m3d debate``: run one debate configuration on a post, streaming each turn as it happens."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer
from rich.panel import Panel

from debates.cli import app, build_sample, console, print_verdict, run_cli
from debates.config import builtin_config_names, load_config
from debates.human import console_input
from debates.state import DebateState
from m3d_agents.backends.config import load_backend_settings
from m3d_agents.backends.factory import BackendPool
from m3d_agents.verdict import Verdict


def stream_turn(message: Any, state: DebateState) -> None:
    """Print each finished turn with its speaker, round and parsed answer."""
    turn = state.finished_turn(message)
    if turn is None:
        return
    stance = turn.stance or ("(no answer)" if turn.reading.error else "")
    title = f"{turn.speaker} · {turn.role} · round {turn.round}" + (f" · {stance}" if stance else "")
    console.print(Panel(turn.text.strip(), title=title, title_align="left"))


@app.command()
def debate(
    config: str = typer.Option("async", "--config", help=f"Built in: {', '.join(builtin_config_names())}; or a YAML path."),
    text: str = typer.Option(..., "--text", help="The caption, claim or post text."),
    image: list[Path] = typer.Option([], "--image", help="An image of the post; repeat for several."),
    backend: Optional[str] = typer.Option(None, "--backend", help="Use this backend for every seat."),
    config_file: Optional[Path] = typer.Option(None, "--config-file", help="YAML file with named backends."),
    human_seat: list[str] = typer.Option([], "--human-seat", help="Take this seat yourself (debater or judge)."),
    taxonomy: str = typer.Option("binary", "--taxonomy"),
    claim_date: Optional[str] = typer.Option(None, "--claim-date", help="YYYY-MM-DD"),
    language: Optional[str] = typer.Option(None, "--language"),
    source_url: Optional[str] = typer.Option(None, "--source-url"),
    as_json: bool = typer.Option(False, "--json", help="Print the Verdict as JSON (turns are not streamed)."),
) -> None:
    """Run a debate on one post; the turns stream live, then the verdict is printed."""
    from debates.debate import run_debate

    async def main() -> Verdict:
        settings = load_backend_settings(config_file)
        debate_config = load_config(config)
        for seat in human_seat:
            debate_config.seat(seat)
        pool = BackendPool(settings)
        try:
            sample = build_sample(text, image, taxonomy, claim_date, language, source_url)
            return await run_debate(
                debate_config,
                sample,
                pool,
                backend=backend,
                human_seats={seat: console_input for seat in human_seat},
                on_message=None if as_json else stream_turn,
            )
        finally:
            await pool.close()

    print_verdict(run_cli(main()), as_json)
