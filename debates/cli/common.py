"""What every ``m3d`` command shares: the consoles, one-line errors, building a sample (typed, or replayed
from a recorded MR2 trace), printing a verdict."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.panel import Panel

from m3d_agents.backends.factory import Backend
from m3d_agents.errors import BackendError, InputError
from m3d_agents.sample import Sample, SampleMetadata
from m3d_agents.verdict import TranscriptTurn, Verdict

console = Console()
err_console = Console(stderr=True)


def fail(message: str, code: int = 2) -> None:
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


def replayed_sample(root: Path, sample_id: str | None, summariser: Backend | None) -> tuple[Sample, dict[str, Any]]:
    """A claim from an MR2 trace, with an evidence source and query answers that never go online.

    Debaters' queries (``query_answerer``) and searching agents' web queries (``searchers["web"]``)
    are both answered from the pages recorded for the claim.
    """
    from retrieval.answerer import GatheredEvidenceAnswerer
    from retrieval.pipeline import mr2_replay_pipeline
    from retrieval.providers.mr2_trace import MR2Trace

    if sample_id is None:
        raise InputError("sample_id", f"--replay-mr2 needs --sample-id; the trace has {', '.join(MR2Trace(root).ids())}")
    pipeline = mr2_replay_pipeline(root, summariser)
    sample = MR2Trace(root).sample(sample_id)
    answerer = GatheredEvidenceAnswerer(pipeline)
    return sample, {"evidence_source": pipeline, "query_answerer": answerer, "searchers": {"web": answerer}}


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
        if verdict.explanation is not None:
            shown = verdict.explanation.display_ids
            for point in verdict.explanation.key_points:
                cited = ", ".join(shown.get(i, i) for i in point.evidence_ids)
                console.print(f"- {point.text} [{cited}]", markup=False)
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


def run_cli(coro):
    """Run a command and turn the errors users can fix into one clear line each."""
    try:
        return asyncio.run(coro)
    except InputError as exc:
        fail(str(exc))
    except BackendError as exc:
        fail(str(exc))
    except Exception as exc:  # noqa: BLE001 - the last line of defence for a CLI
        from openai import APIConnectionError, APIStatusError, APITimeoutError

        if isinstance(exc, (APIConnectionError, APITimeoutError)):
            fail(f"the model endpoint did not answer: {exc}")
        if isinstance(exc, APIStatusError):
            fail(f"the model endpoint refused the request ({exc.status_code}): {exc.message}")
        raise


