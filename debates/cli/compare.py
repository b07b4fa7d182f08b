"""``m3d compare``: runs side by side, with paired bootstrap 95% intervals on the differences."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Optional

import typer
from rich.table import Table

from debates.cli.common import console, run_cli, written_path
from m3d_agents.config_types import SEED_MAX


COMPARISON_FILES = {"comparison", "accuracy_vs_latency", "accuracy_vs_cost"}
"""The stems of what ``--out`` receives; a folder holding anything else is not written into."""

def compare(
    runs: list[Path] = typer.Argument(..., help="Run folders; the first is the baseline."),
    resamples: int = typer.Option(2000, "--resamples", min=100, help="Bootstrap resamples."),
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX, help="Seed of the bootstrap."),
    out: Optional[Path] = typer.Option(None, "--out", parser=written_path, help="Write comparison.json and the trade-off plots here."),
    as_json: bool = typer.Option(False, "--json"),
    gold: str = typer.Option(
        "dataset", "--gold",
        help="Score against the data set's labels, or against them with the reviewers' overrides (annotations.jsonl "
        "of every run given; the latest override of a sample counts, so all runs share one gold label).",
    ),
) -> None:
    """Print runs side by side, with paired bootstrap 95% intervals on the differences to the first."""
    from debates.eval.score.annotations import GoldSource, read_annotations
    from debates.eval.score.compare import paired_bootstrap
    from debates.eval.score.report import load_run, plot_tradeoffs, run_label, summarise
    from m3d_agents.errors import InputError
    from m3d_agents.safe_files import refuse_foreign_folder

    async def main() -> tuple[list, list]:
        if gold not in ("dataset", "annotations"):
            raise InputError("gold", f"{gold!r} is neither 'dataset' nor 'annotations'")
        if out is not None:
            refuse_foreign_folder(out, "out", lambda name: name.lstrip(".").split(".")[0] in COMPARISON_FILES,
                                  "the folder of a comparison")
        source: GoldSource = "annotations" if gold == "annotations" else "dataset"
        pooled = [a for r in runs for a in read_annotations(r)] if source == "annotations" else None
        summaries = [summarise(r, source, pooled) for r in runs]
        taxonomies = {s.manifest.taxonomy for s in summaries}
        if len(taxonomies) > 1:
            raise InputError("runs", f"the runs use different taxonomies ({', '.join(sorted(taxonomies))})")
        names = [f"{run_label(s)} ({Path(s.path).name})" for s in summaries]
        rows = [load_run(r, source, pooled)[1] for r in runs]
        return summaries, paired_bootstrap(names, rows, taxonomies.pop(), resamples=resamples, seed=seed)

    summaries, comparisons = run_cli(main())
    if out is not None:
        from m3d_agents.safe_files import replace_file

        out.mkdir(parents=True, exist_ok=True)
        replace_file(out / "comparison.json", "[" + ",".join(c.model_dump_json() for c in comparisons) + "]")
        plot_tradeoffs(summaries, out)
    if as_json:
        import json

        sys.stdout.write(json.dumps({"runs": [s.model_dump(mode="json") for s in summaries],
                                     "comparisons": [c.model_dump() for c in comparisons]}, indent=2) + "\n")
        return
    table = Table("run", "samples", "accuracy", "macro-F1", "binary F1", "abstained", "errors", "ECE", "p50 s", "p95 s",
                  "calls", "cost $")
    for s in summaries:
        m = s.metrics
        c = m.classification

        def f(v: float | None, d: int = 3) -> str:
            return "n/a" if v is None else f"{v:.{d}f}"

        table.add_row(f"{run_label(s)}\n{s.path}", str(m.samples), f(c.accuracy if c else None), f(c.macro_f1 if c else None),
                      f(m.binary.macro_f1 if m.binary else None), f(m.abstention_rate), str(m.errors), f(m.ece),
                      f(m.latency_p50_s, 2), f(m.latency_p95_s, 2), f(m.calls_per_sample, 1), f(m.cost_usd, 4))
    console.print(table)
    diff = Table("vs baseline", "paired n", "Δ accuracy [95% CI]", "Δ macro-F1 [95% CI]")
    for comp in comparisons:
        diff.add_row(
            f"{comp.other}\n− {comp.baseline}", str(comp.paired_samples),
            f"{comp.accuracy.difference:+.3f} [{comp.accuracy.low:+.3f}, {comp.accuracy.high:+.3f}]",
            f"{comp.macro_f1.difference:+.3f} [{comp.macro_f1.low:+.3f}, {comp.macro_f1.high:+.3f}]",
        )
    console.print(diff)
    console.print(f"[dim]paired bootstrap, {resamples} resamples, seed {seed}[/]")
    if gold == "annotations":
        console.print(f"[dim]scored against the reviewers' labels: {summaries[0].annotated} annotated sample(s) per run[/]")
