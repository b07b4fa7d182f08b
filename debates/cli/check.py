"""``m3d check``: check one post with one configuration (the single checker by default) and print its verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from debates.cli.common import build_sample, print_verdict, replayed_sample, run_cli
from debates.strategy import available_configs, load_config, run_sample
from m3d_agents.backends.config import load_backend_settings
from m3d_agents.backends.factory import BackendPool
from m3d_agents.errors import InputError
from m3d_agents.verdict import Verdict


def check(
    text: Optional[str] = typer.Option(None, "--text", help="The caption, claim or post text."),
    image: list[Path] = typer.Option([], "--image", help="An image of the post; repeat for several."),
    config: str = typer.Option(
        "check", "--config", help=f"Configuration to run. Built in: {', '.join(available_configs())}; or a YAML path."
    ),
    backend: Optional[str] = typer.Option(None, "--backend", help="local, vllm, openai, or a name from the config file."),
    config_file: Optional[Path] = typer.Option(None, "--config-file", help="YAML file with named backends."),
    taxonomy: str = typer.Option("binary", "--taxonomy", help="Label set of the answer."),
    claim_date: Optional[str] = typer.Option(None, "--claim-date", help="YYYY-MM-DD"),
    language: Optional[str] = typer.Option(None, "--language"),
    source_url: Optional[str] = typer.Option(None, "--source-url"),
    replay_mr2: Optional[Path] = typer.Option(
        None, "--replay-mr2", help="Check a claim of a recorded MR2 trace, with evidence replayed offline from it."
    ),
    sample_id: Optional[str] = typer.Option(None, "--sample-id", help="With --replay-mr2: which claim."),
    summarise: bool = typer.Option(False, "--summarise", help="With --replay-mr2: summarise pages with the backend first."),
    as_json: bool = typer.Option(False, "--json", help="Print the Verdict as JSON."),
) -> None:
    """Check one post and print the verdict."""

    async def main() -> Verdict:
        settings = load_backend_settings(config_file)
        loaded = load_config(config)
        pool = BackendPool(settings)
        try:
            options: dict[str, Any] = {}
            if replay_mr2 is not None:
                summariser = pool.get(backend or pool.default_backend) if summarise else None
                sample, options = replayed_sample(replay_mr2, sample_id, summariser)
            elif text is None:
                raise InputError("text", "give the post with --text, or a recorded claim with --replay-mr2 and --sample-id")
            else:
                sample = build_sample(text, image, taxonomy, claim_date, language, source_url)
            return await run_sample(loaded, sample, pool, backend=backend, **options)
        finally:
            await pool.close()

    print_verdict(run_cli(main()), as_json)
