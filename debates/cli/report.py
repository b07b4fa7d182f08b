"""``m3d report``: write a run's metrics, report and plots again, against the data set's labels or the reviewers'."""

from __future__ import annotations

from pathlib import Path

import typer

from debates.cli.common import console, run_cli
from debates.cli.tables import print_caveats, print_warnings


def report(
    run: Path = typer.Argument(..., help="A run folder written by m3d evaluate."),
    gold: str = typer.Option(
        "dataset", "--gold",
        help="dataset: the data set's labels (report.md); annotations: with the reviewers' overrides from "
        "annotations.jsonl (report.annotations.md, next to the other).",
    ),
) -> None:
    """Score a run again and write its report; the results file is only read."""
    from debates.eval.score.annotations import GoldSource
    from debates.eval.score.report import ANNOTATED_REPORT, REPORT, RunSummary, write_report
    from m3d_agents.errors import InputError

    async def main() -> RunSummary:
        if gold not in ("dataset", "annotations"):
            raise InputError("gold", f"{gold!r} is neither 'dataset' nor 'annotations'")
        source: GoldSource = "annotations" if gold == "annotations" else "dataset"
        return write_report(run, source)

    summary = run_cli(main())
    m = summary.metrics
    accuracy = f"{m.classification.accuracy:.3f}" if m.classification else "n/a"
    macro = f"{m.classification.macro_f1:.3f}" if m.classification else "n/a"
    written = run / (ANNOTATED_REPORT if summary.gold == "annotations" else REPORT)
    against = f"the reviewers' labels ({summary.annotated} annotated)" if summary.gold == "annotations" else "the data set's labels"
    console.print(f"{run}: {m.samples} samples against {against}: accuracy {accuracy}, macro-F1 {macro}; report in {written}",
                  soft_wrap=True)
    print_warnings(summary.left_out)
    print_caveats(summary.caveats)
