"""``m3d check``: check one post with one configuration (the single checker by default) and print its verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from debates.cli.common import (
    build_sample, evidence_store_option, print_verdict, replayed_sample, retrieval_option, run_cli, run_post,
)
from debates.config_loader import available_configs, load_config
from debates.session import run_sample
from m3d_agents.backends.config import BackendSettings, load_backend_settings
from m3d_agents.backends.factory import BackendPool
from m3d_agents.errors import InputError
from m3d_agents.sample import Sample
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
    language: Optional[str] = typer.Option(None, "--language", help="The post's language (ISO 639-1, e.g. en); default: detected from the text."),
    source_url: Optional[str] = typer.Option(None, "--source-url", help="Where the post was published (used by the leakage filter and reliability checks)."),
    replay_mr2: Optional[Path] = typer.Option(
        None, "--replay-mr2", help="Check a claim of a recorded MR2 trace, with evidence replayed offline from it."
    ),
    sample_id: Optional[str] = typer.Option(None, "--sample-id", help="With --replay-mr2: which claim."),
    summarise: bool = typer.Option(False, "--summarise", help="With --replay-mr2: summarise pages with the backend first."),
    retrieval: Optional[str] = retrieval_option(),
    evidence_store: Optional[Path] = evidence_store_option(),
    as_json: bool = typer.Option(False, "--json", help="Print the Verdict as JSON."),
    video: Optional[Path] = typer.Option(None, "--video", help="The video of the post (mp4, webm, ...); see --config factguard."),
    transcript: Optional[str] = typer.Option(None, "--transcript", help="What is said in the video, as text."),
) -> None:
    """Check one post and print the verdict, where its evidence came from and what the tools found."""

    async def replayed(settings: BackendSettings) -> tuple[Verdict, bool, Sample]:
        assert replay_mr2 is not None
        loaded = load_config(config)
        pool = BackendPool(settings)
        try:
            summariser = pool.get(backend or pool.default_backend) if summarise else None
            sample, options = replayed_sample(replay_mr2, sample_id, summariser)
            verdict = await run_sample(loaded, sample, pool, backend=backend, **options)
            return verdict, pool.get(backend or getattr(loaded, "backend", None) or pool.default_backend).vision, sample
        finally:
            await pool.close()

    async def main() -> tuple[Verdict, bool, Sample, BackendSettings]:
        settings = load_backend_settings(config_file)
        if replay_mr2 is not None:
            if retrieval is not None or evidence_store is not None:
                raise InputError("retrieval", "--replay-mr2 replays the trace's own evidence; leave out --retrieval and --evidence-store")
            verdict, vision, sample = await replayed(settings)
            return verdict, vision, sample, settings
        if text is None:
            raise InputError("text", "give the post with --text, or a recorded claim with --replay-mr2 and --sample-id")
        loaded = load_config(config)
        sample = build_sample(text, image, taxonomy, claim_date, language, source_url, video, transcript)
        verdict, vision = await run_post(loaded, sample, settings, backend, retrieval=retrieval, evidence_store=evidence_store)
        return verdict, vision, sample, settings

    verdict, vision, sample, settings = run_cli(main())
    print_verdict(verdict, as_json, sample=sample, settings=settings, vision=vision)
