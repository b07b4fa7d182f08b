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


RETRIEVAL_HELP = (
    "Where evidence comes from: live (ask the providers whose keys are set), record (reuse the evidence "
    "store, ask for the rest), replay (the store only, no network), off. Default: record when the "
    "configuration has a retrieval block, else off."
)
EVIDENCE_STORE_HELP = "The evidence store (SQLite) to record into or replay from; default <cache dir>/evidence.sqlite."


def retrieval_option() -> Any:
    return typer.Option(None, "--retrieval", help=RETRIEVAL_HELP, case_sensitive=False)


def evidence_store_option() -> Any:
    return typer.Option(None, "--evidence-store", help=EVIDENCE_STORE_HELP)


def demo_backends(verdict: Verdict, settings: BackendSettings) -> list[str]:
    """The backends of a verdict that are the packaged 270M model (the embedded default)."""
    demo = []
    for name in filter(None, verdict.backend.split(",")):
        try:
            config = settings.get(name.split(":")[0])
        except InputError:
            continue
        if config.kind == "local" and config.local.model_path is None and not config.base_url:
            demo.append(name)
    return demo


def tool_findings(sample: Sample | None, vision: bool) -> list[str]:
    """What the image tools reported to a model that cannot see images (cached during the run, so free)."""
    if sample is None or not sample.images:
        return []
    if vision:
        return [f"tools: the model saw the {len(sample.images)} image(s) itself"]
    from m3d_agents.media.images import load_image
    from m3d_agents.media.post_content import describe_image

    lines = []
    for i, path in enumerate(sample.images, start=1):
        try:
            found = describe_image(load_image(path)).replace("\n", "; ")
        except InputError as exc:
            found = f"unreadable: {exc}"
        lines.append(f"tools on image {i}: {found}")
    return lines


def print_verdict(
    verdict: Verdict,
    as_json: bool,
    *,
    sample: Sample | None = None,
    settings: BackendSettings | None = None,
    vision: bool = False,
) -> None:
    """The verdict, then the evidence report, the tool findings, the cost, and a plain note when the
    backend is the 270M demonstration model."""
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
    if verdict.evidence_report is not None:
        for line in verdict.evidence_report.lines():
            console.print(line, markup=False)
    for line in tool_findings(sample, vision):
        console.print(line, markup=False)
    acc = verdict.accounting
    console.print(
        f"[dim]{verdict.config} on {verdict.backend}: {acc.model_calls} model calls, "
        f"{acc.prompt_tokens}+{acc.completion_tokens} tokens, {acc.cache_hits} cache hits, "
        f"wall {verdict.diagnostics.get('wall_time_s', 0):.2f}s[/]"
    )
    demo = demo_backends(verdict, settings) if settings is not None else []
    if demo:
        from m3d_agents.backends.local_server import DEMO_MODEL

        console.print(
            f"[bold yellow]note:[/] backend {', '.join(demo)} is {DEMO_MODEL}. It shows that the pipeline runs "
            "end to end; its verdicts say little about the post. Use --backend vllm or openai for real checks."
        )


def stream_turn(turn: TranscriptTurn) -> None:
    """Print a finished turn with its speaker, round and parsed answer."""
    stance = turn.stance or ("(no answer)" if turn.parse_error else "")
    title = f"{turn.speaker} · {turn.role} · round {turn.round}" + (f" · {stance}" if stance else "")
    console.print(Panel(turn.text.strip(), title=title, title_align="left"))


async def run_post(
    config: StrategyConfig,
    sample: Sample,
    settings: BackendSettings,
    backend: str | None,
    *,
    retrieval: str | None = None,
    evidence_store: Path | None = None,
    **options: Any,
) -> tuple[Verdict, bool]:
    """Run one configuration on one post with the configured backends and the run's evidence sources,
    closing them afterwards. Returns the verdict and whether the backend could see images."""
    from retrieval.runpath import open_retrieval, parse_mode

    pool = BackendPool(settings)
    try:
        sources = open_retrieval(config, pool, mode=parse_mode(retrieval), store_path=evidence_store, backend=backend)
        try:
            verdict = await run_sample(config, sample, pool, backend=backend, **{**sources.context_options(), **options})
        finally:
            await sources.close()
        name = backend or getattr(config, "backend", None) or pool.default_backend
        return verdict, pool.get(name).vision
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
