"""What every ``m3d`` command shares: the consoles, one-line errors, building a sample, printing a verdict."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any, NoReturn

import typer
from rich.console import Console
from rich.panel import Panel

from debates.strategy import StrategyConfig, run_sample
from m3d_agents.backends.config import BackendSettings
from m3d_agents.backends.factory import BackendPool
from m3d_agents.errors import BackendError, InputError
from m3d_agents.sample import Sample, SampleMetadata
from m3d_agents.verdict import TranscriptTurn, Verdict

console = Console()
err_console = Console(stderr=True)


def fail(message: str, code: int = 2) -> NoReturn:
    err_console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code)


def build_sample(
    text: str, images: list[Path], taxonomy: str, claim_date: str | None, language: str | None, source_url: str | None
) -> Sample:
    from pydantic import ValidationError

    try:
        return Sample(
            text=text,
            images=images,
            taxonomy=taxonomy,
            metadata=SampleMetadata.model_validate(
                {"claim_date": claim_date, "language": language, "source_url": source_url}
            ),
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "sample"
        raise InputError(field, first["msg"]) from exc


def print_verdict(verdict: Verdict, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(verdict.model_dump_json(indent=2) + "\n")
        return
    if verdict.abstained:
        console.print(f"[bold yellow]ABSTAINED[/]: {verdict.abstain_reason}")
    else:
        colour = "red" if verdict.is_misinformation else "green"
        confidence = f"{verdict.confidence:.2f}" if verdict.confidence is not None else "n/a"
        console.print(
            f"[bold {colour}]{verdict.label}[/] (misinformation: {verdict.is_misinformation}, confidence {confidence})"
        )
        if verdict.rationale:
            console.print(verdict.rationale)
    acc = verdict.accounting
    console.print(
        f"[dim]{verdict.config} on {verdict.backend}: {acc.model_calls} model calls, "
        f"{acc.prompt_tokens}+{acc.completion_tokens} tokens, {acc.cache_hits} cache hits, "
        f"wall {verdict.diagnostics.get('wall_time_s', 0):.2f}s[/]"
    )


def stream_turn(turn: TranscriptTurn) -> None:
    """Print a finished turn with its speaker, round and parsed answer."""
    stance = turn.stance or ("(no answer)" if turn.parse_error else "")
    title = f"{turn.speaker} · {turn.role} · round {turn.round}" + (f" · {stance}" if stance else "")
    console.print(Panel(turn.text.strip(), title=title, title_align="left"))


async def run_post(
    config: StrategyConfig, sample: Sample, settings: BackendSettings, backend: str | None, **options: Any
) -> Verdict:
    """Run one configuration on one post with the configured backends, closing them afterwards."""
    pool = BackendPool(settings)
    try:
        return await run_sample(config, sample, pool, backend=backend, **options)
    finally:
        await pool.close()


def run_cli(coro):
    """Run a command and turn the errors users can fix into one clear line each.

    Both transports raise the project's own error types (the SDK's are translated where they are
    raised, in ``m3d_agents.backends.transports.sdk``), so nothing here knows which one ran.
    """
    try:
        return asyncio.run(coro)
    except InputError as exc:
        fail(str(exc))
    except BackendError as exc:
        fail(str(exc))
