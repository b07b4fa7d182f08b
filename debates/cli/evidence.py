"""``m3d evidence``: show the evidence the retrieval pipeline gathers for a sample."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer
from rich.text import Text

from debates.cli.common import console, print_json, run_cli
from m3d_agents.evidence import Evidence


def print_evidence(evidence: list[Evidence], failures: list[str], leakage: dict[str, int]) -> None:
    kept = sum(1 for e in evidence if e.kept)
    console.print(f"[bold]{kept} kept[/], {len(evidence) - kept} dropped; leakage filter: {leakage}")
    for item in evidence:
        status = "[green]kept[/]" if item.kept else "[red]dropped[/]"
        where = item.url or item.kind
        console.print(
            f"\n[bold]{item.id}[/] {status} {item.kind} {where}\n"
            f"  reliability: {item.reliability}; language: {item.language or '?'}; published: {item.published or '?'}"
        )
        if item.title:
            console.print(f"  title: {item.title}", markup=False)
        console.print(f"  why: {item.reason}", markup=False)
        body = (item.summary or item.text).replace("\n", " ")
        label = "summary" if item.summary else "text"
        console.print(f"  {label}: {body[:400]}{'...' if len(body) > 400 else ''}", markup=False)
    for failure in failures:
        console.print(Text.assemble(("not used:", "yellow"), " ", failure), soft_wrap=True)


def evidence(
    replay_mr2: Path = typer.Option(..., "--replay-mr2", help="An MR2 folder with dataset_items_test.json and queries_dataset/."),
    sample_id: Optional[str] = typer.Option(None, "--sample-id", help="The claim to show; omit to list the ids."),
    backend: Optional[str] = typer.Option(None, "--backend", help="Summarise pages with this backend (default: no summaries)."),
    config_file: Optional[Path] = typer.Option(None, "--config-file", help="YAML file with named backends."),
    as_json: bool = typer.Option(False, "--json", help="Print the evidence as JSON."),
    config: Optional[str] = typer.Option(
        None, "--config", help="A configuration whose retrieval settings filter the evidence as its runs do (leakage "
        "rules, reliability list, judging of unknown domains); default: the library's."
    ),
) -> None:
    """Gather the evidence for one sample offline, from a recorded MR2 retrieval trace, as a run replaying it would."""
    from debates.config_loader import load_config
    from m3d_agents.backends.config import load_backend_settings
    from m3d_agents.backends.factory import BackendPool
    from retrieval.pipeline import EvidencePipeline, GatherResult
    from retrieval.providers.mr2_trace import MR2Trace
    from retrieval.runpath import replay_mr2 as replayed

    async def main() -> GatherResult | list[str]:
        trace = MR2Trace(replay_mr2)
        if sample_id is None:
            return trace.ids()
        sample = trace.sample(sample_id)
        settings = load_config(config).retrieval if config is not None else None
        pool = BackendPool(load_backend_settings(config_file))
        try:
            sources = replayed(replay_mr2, settings, pool.get(backend) if backend else None)
            pipeline = sources.evidence_source
            assert isinstance(pipeline, EvidencePipeline), "a replayed trace's evidence comes from its pipeline"
            return await pipeline.collect(sample)
        finally:
            await pool.close()

    result = run_cli(main())
    if isinstance(result, list):
        console.print("samples in the trace: " + ", ".join(result))
        return
    if as_json:
        print_json(result)
        return
    print_evidence(result.evidence, result.failures, result.leakage.dropped)
