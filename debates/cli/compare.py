"""``m3d compare``: runs side by side, with paired bootstrap 95% intervals on the differences."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from debates.cli.common import console, print_json, run_cli, written_path
from debates.cli.tables import markdown_table, print_caveats, print_table, run_letters
from m3d_agents.config_types import SEED_MAX

if TYPE_CHECKING:
    from debates.eval.score.caveats import Caveat
    from debates.eval.score.compare import Interval, PairedComparison
    from debates.eval.score.report import RunSummary


COMPARISON_FILES = {"comparison", "accuracy_vs_latency", "accuracy_vs_cost"}
"""The stems of what ``--out`` receives; a folder holding anything else is not written into."""

FIGURES_NOTE = (
    "latency: wall time per sample, over the samples that called a model (those answered wholly from the response "
    "cache, 'from the cache', are left out); model / waiting s: per sample, the backends' time answering its calls "
    "and the time its calls waited for a backend slot, each summed over the calls (n/a: not measured in that run); "
    "ECE: expected calibration error, 10 equal-width confidence bins"
)
"""Under the figures: what the time and calibration rows measure (docs/guides/evaluate-and-compare.md says more)."""

def compare(
    runs: list[Path] = typer.Argument(..., help="Run folders; the first is the baseline."),
    resamples: int = typer.Option(2000, "--resamples", min=100, help="Bootstrap resamples."),
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX, help="Seed of the bootstrap."),
    out: Optional[Path] = typer.Option(None, "--out", parser=written_path,
                                       help="Write comparison.md, comparison.json and the trade-off plots here."),
    as_json: bool = typer.Option(False, "--json", help="Print the runs, the comparisons and the caveats as JSON."),
    gold: str = typer.Option(
        "dataset", "--gold",
        help="Score against the data set's labels, or against them with the reviewers' overrides (annotations.jsonl "
        "of every run given; the latest override of a sample counts, so all runs share one gold label).",
    ),
) -> None:
    """Print runs side by side (one column each, A the baseline), with paired bootstrap 95% intervals on the
    differences to A, and what a small or uneven comparison cannot say."""
    from debates.eval.score.annotations import GoldSource, read_annotations
    from debates.eval.score.caveats import comparison_caveats
    from debates.eval.score.compare import paired_bootstrap
    from debates.eval.score.report import load_run, plot_tradeoffs, run_label, summarise
    from m3d_agents.errors import InputError
    from m3d_agents.safe_files import refuse_foreign_folder

    async def main() -> tuple[list[RunSummary], list[PairedComparison], list[Caveat]]:
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
        loaded = [load_run(r, source, pooled) for r in runs]
        comparisons = paired_bootstrap(names, [rows for _, rows in loaded], taxonomies.pop(), resamples=resamples, seed=seed)
        letters = run_letters(len(runs))
        caveats = comparison_caveats(letters, loaded, comparisons[0].paired_samples if comparisons else 0)
        return summaries, comparisons, caveats

    summaries, comparisons, caveats = run_cli(main())
    letters = run_letters(len(summaries))
    legend = [(letter, run_label(s), str(s.path)) for letter, s in zip(letters, summaries)]
    figures = figure_rows(summaries)
    differences = [
        [letter, str(comp.paired_samples), interval(comp.accuracy), interval(comp.macro_f1)]
        for letter, comp in zip(letters[1:], comparisons)
    ]
    difference_columns = ["vs A", "paired n", "Δ accuracy [95% CI]", "Δ macro-F1 [95% CI]"]
    footer = f"{FIGURES_NOTE}\npaired bootstrap, {resamples} resamples, seed {seed}" + (
        f"; scored against the reviewers' labels: {summaries[0].annotated} annotated sample(s) per run"
        if gold == "annotations" else "")
    if out is not None:
        from m3d_agents.safe_files import OwnedFolder

        folder = OwnedFolder(out).create()
        folder.write_json("comparison.json", [c.model_dump(mode="json") for c in comparisons], indent=None)
        folder.write("comparison.md", comparison_markdown(legend, letters, figures, difference_columns, differences, caveats,
                                                          footer))
        plot_tradeoffs(summaries, folder)
    if as_json:
        print_json({"runs": [s.model_dump(mode="json") for s in summaries], "comparisons": [c.model_dump() for c in comparisons],
                    "caveats": [c.model_dump() for c in caveats]})
        return
    for letter, label, path in legend:
        console.print(f"{letter} = {label}  {path}", markup=False, highlight=False, soft_wrap=True)
    print_table("Figures of each run", ["figure", *letters], figures)
    print_table("Differences to A (the baseline)", difference_columns, differences)
    console.print(footer, style="dim", markup=False, highlight=False)
    if out is not None:
        console.print(f"written: {out / 'comparison.md'}, {out / 'comparison.json'}", markup=False, highlight=False,
                      soft_wrap=True)
    print_caveats(caveats)


def interval(value: Interval) -> str:
    return f"{value.difference:+.3f} [{value.low:+.3f}, {value.high:+.3f}]"


def figure_rows(summaries: list[RunSummary]) -> list[list[str]]:
    """One row per figure, one column per run."""

    def f(v: float | None, d: int = 3) -> str:
        return "n/a" if v is None else f"{v:.{d}f}"

    def row(name: str, values: list[str]) -> list[str]:
        return [name, *values]

    metrics = [s.metrics for s in summaries]
    return [
        row("samples (scored)", [f"{m.samples} ({m.scored})" for m in metrics]),
        row("accuracy", [f(m.classification.accuracy if m.classification else None) for m in metrics]),
        row("macro-F1", [f(m.classification.macro_f1 if m.classification else None) for m in metrics]),
        row("binary F1", [f(m.binary.macro_f1 if m.binary else None) for m in metrics]),
        row("abstained", [f(m.abstention_rate) for m in metrics]),
        row("errors", [str(m.errors) for m in metrics]),
        row("ECE", [f(m.ece) for m in metrics]),
        row("latency p50 / p95 s", [f"{f(m.latency_p50_s, 1)} / {f(m.latency_p95_s, 1)}" for m in metrics]),
        row("from the cache", [f"{m.cached_rows} of {m.samples - m.errors}" for m in metrics]),
        row("model / waiting s", [f"{f(m.model_s_per_sample, 1)} / {f(m.wait_s_per_sample, 1)}" for m in metrics]),
        row("model calls / sample", [f(m.calls_per_sample, 1) for m in metrics]),
        row("cost $", [f(m.cost_usd, 4) for m in metrics]),
    ]


def comparison_markdown(legend: list[tuple[str, str, str]], letters: list[str], figures: list[list[str]],
                        difference_columns: list[str], differences: list[list[str]], caveats: list[Caveat],
                        footer: str) -> str:
    lines = ["# Comparison", "", *[f"- **{letter}**: `{label}` ({path})" for letter, label, path in legend], ""]
    if caveats:
        lines += ["**Read with care:**", "", *[f"- {c.text}" for c in caveats], ""]
    lines += ["## Runs", "", *markdown_table(["figure", *letters], figures), "",
              "## Differences to A (the baseline)", "", *markdown_table(difference_columns, differences), "",
              footer.replace("\n", "\n\n"), ""]
    return "\n".join(lines)
