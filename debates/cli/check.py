"""``m3d check``: check one post with one configuration (the single checker by default) and print its verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from debates.cli.common import build_sample, evidence_store_option, print_verdict, retrieval_option, run_cli, run_post
from debates.strategy import available_configs, load_config
from m3d_agents.backends.config import BackendSettings, load_backend_settings
from m3d_agents.sample import Sample
from m3d_agents.verdict import Verdict


def check(
    text: str = typer.Option(..., "--text", help="The caption, claim or post text."),
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
    retrieval: Optional[str] = retrieval_option(),
    evidence_store: Optional[Path] = evidence_store_option(),
    as_json: bool = typer.Option(False, "--json", help="Print the Verdict as JSON."),
    video: Optional[Path] = typer.Option(None, "--video", help="The video of the post (mp4, webm, ...); see --config factguard."),
    transcript: Optional[str] = typer.Option(None, "--transcript", help="What is said in the video, as text."),
) -> None:
    """Check one post and print the verdict, where its evidence came from and what the tools found."""

    async def main() -> tuple[Verdict, bool, Sample, BackendSettings]:
        settings = load_backend_settings(config_file)
        loaded = load_config(config)
        sample = build_sample(text, image, taxonomy, claim_date, language, source_url, video, transcript)
        verdict, vision = await run_post(loaded, sample, settings, backend, retrieval=retrieval, evidence_store=evidence_store)
        return verdict, vision, sample, settings

    verdict, vision, sample, settings = run_cli(main())
    print_verdict(verdict, as_json, sample=sample, settings=settings, vision=vision)
