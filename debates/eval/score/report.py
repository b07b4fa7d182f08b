"""What a run writes about itself: ``metrics.json``, ``report.md`` and PNG plots.

The plots of accuracy against latency and against cost put every run found next to this one
(sibling folders of the same ``--out`` parent) on one chart, one point per configuration, so
that a folder of runs gives the trade-off view directly.
"""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any, Sequence

from pydantic import BaseModel, Field

from debates.eval.score.caveats import Caveat, run_caveats
from debates.eval.score.annotations import ANNOTATIONS, Annotation, GoldSource, read_annotations, with_annotated_gold
from debates.eval.records import MANIFEST, RESULTS, RunManifest, read_manifest
from debates.eval.lock import running_elsewhere
from debates.eval.score.metrics import RunMetrics, compute_metrics
from debates.eval.records import EvalRow, read_rows
from m3d_agents.safe_files import OwnedFolder
from m3d_agents.errors import InputError, one_line
from m3d_agents.verdict import Verdict

METRICS = "metrics.json"
REPORT = "report.md"
REVIEWS = "reviews"
ANNOTATED_METRICS = "metrics.annotations.json"
ANNOTATED_REPORT = "report.annotations.md"
ANNOTATED_CONFUSION = "confusion.annotations.png"


class RunSummary(BaseModel):
    path: str
    manifest: RunManifest
    metrics: RunMetrics
    gold: GoldSource = "dataset"
    annotated: int = 0
    """With ``gold="annotations"``: how many samples were scored against a reviewer's label."""
    caveats: list[Caveat] = []
    """What the figures cannot say (one class, few samples, an unfinished run): :mod:`debates.eval.score.caveats`."""
    left_out: list[str] = Field(default_factory=list, exclude=True)
    """Sibling run folders that could not be read and were left out of the trade-off plots, one line each
    (printed as warnings, never written: a damaged neighbour is not this run's business)."""


def load_run(
    run_dir: Path, gold: GoldSource = "dataset", annotations: Sequence[Annotation] | None = None
) -> tuple[RunManifest, list[EvalRow]]:
    """The manifest and the rows in data set order; with ``gold="annotations"`` the gold labels carry
    the reviewers' overrides (the run's own ``annotations.jsonl`` unless ``annotations`` are given)."""
    manifest, rows, _ = _load(run_dir, gold, annotations)
    return manifest, rows


def _load(
    run_dir: Path, gold: GoldSource, annotations: Sequence[Annotation] | None
) -> tuple[RunManifest, list[EvalRow], int]:
    manifest_path = run_dir / MANIFEST
    if not os.path.lexists(manifest_path):
        raise InputError("run", f"{run_dir} is not a run folder (no {MANIFEST})")
    manifest = read_manifest(manifest_path)
    rows, _ = read_rows(run_dir / RESULTS)
    rows = sorted(rows, key=lambda r: r.index)
    annotated = 0
    if gold == "annotations":
        rows, annotated = with_annotated_gold(
            rows, read_annotations(run_dir) if annotations is None else annotations, manifest.taxonomy
        )
    return manifest, rows, annotated


def summarise(run_dir: Path, gold: GoldSource = "dataset", annotations: Sequence[Annotation] | None = None) -> RunSummary:
    manifest, rows, annotated = _load(run_dir, gold, annotations)
    return RunSummary(path=str(run_dir), manifest=manifest, metrics=compute_metrics(rows, manifest.taxonomy),
                      gold=gold, annotated=annotated, caveats=run_caveats(manifest, rows, running=running_elsewhere(run_dir)))


def run_label(summary: RunSummary) -> str:
    return f"{summary.manifest.config}@{summary.manifest.backend}"


def _fmt(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def markdown(summary: RunSummary) -> str:
    m, man = summary.metrics, summary.manifest
    lines = [
        f"# {man.config} on {man.dataset}",
        "",
        f"backend `{man.backend}`, seed {man.seed}, taxonomy `{man.taxonomy}`, created {man.created}",
        "",
        *([f"Scored against the reviewers' labels: {summary.annotated} sample(s) take their gold label from "
           f"`{ANNOTATIONS}`, the others keep the data set's.", ""] if summary.gold == "annotations" else []),
        *([f"Samples: {man.subset.describe(m.samples, man.load_report.loaded)}.", ""]
          if man.subset is not None and man.load_report is not None else []),
        *(["**Read with care:**", "", *[f"- {c.text}" for c in summary.caveats], ""] if summary.caveats else []),
        "| figure | value |",
        "|---|---|",
        f"| samples (scored / errors) | {m.samples} ({m.scored} / {m.errors}) |",
        f"| accuracy (abstained and failed samples count as wrong) | {_fmt(m.classification.accuracy if m.classification else None)} |",
        f"| macro-F1 | {_fmt(m.classification.macro_f1 if m.classification else None)} |",
        f"| weighted F1 | {_fmt(m.classification.weighted_f1 if m.classification else None)} |",
        f"| weighted precision / recall | {_fmt(m.classification.weighted_precision if m.classification else None)}"
        f" / {_fmt(m.classification.weighted_recall if m.classification else None)} |",
        f"| binary accuracy (misinformation or not) | {_fmt(m.binary.accuracy if m.binary else None)} |",
        f"| binary macro-F1 | {_fmt(m.binary.macro_f1 if m.binary else None)} |",
        *(
            [f"| true vs not true accuracy / macro-F1 (AgentFact's binary view) | {_fmt(m.true_vs_not_true.accuracy)}"
             f" / {_fmt(m.true_vs_not_true.macro_f1)} |"]
            if m.true_vs_not_true else []
        ),
        *([f"| citation validity (valid / all cited ids; a proxy, not a human rating) | {_fmt(m.citation_validity)}"
           f" ({m.cited_ids} cited ids) |"]
          if m.cited_ids else []),
        *([f"| leakage filter drops by rule | {', '.join(f'{rule} {n}' for rule, n in m.leakage.items())} |"]
          if m.leakage else []),
        *([f"| leakage filter drops by rule, share of the {m.looked_at} evidence items looked at | "
           f"{', '.join(f'{rule} {share:.3f}' for rule, share in m.leakage_share.items())} |"]
          if m.leakage_share else []),
        *([f"| undated pages kept (the date rule could not check them), share of the kept pages | {_fmt(m.undated_kept_share)} |"]
          if m.undated_kept_share is not None else []),
        f"| abstention rate / coverage (answered share of attempted) | {_fmt(m.abstention_rate)} / {_fmt(m.coverage)} |",
        f"| selective accuracy (answered only) | {_fmt(m.selective_accuracy)} |",
        f"| ECE (expected calibration error, 10 equal-width confidence bins) | {_fmt(m.ece)} |",
        f"| latency p50 / p95 (s), over the {m.latency_rows} samples that called a model | "
        f"{_fmt(m.latency_p50_s, 2)} / {_fmt(m.latency_p95_s, 2)} |",
        f"| samples answered wholly from the response cache (left out of the latency) | {m.cached_rows} |",
        f"| per sample: backends' answering time / calls' wait for a slot (s, summed over its calls) | "
        f"{_fmt(m.model_s_per_sample, 2)} / {_fmt(m.wait_s_per_sample, 2)} |",
        f"| model calls per sample | {_fmt(m.calls_per_sample, 2)} |",
        f"| answers cut at the token cap (finish_reason length) | {m.cut_answers} of {m.model_calls} model calls |",
        f"| tokens per sample (prompt + completion) | {m.prompt_tokens_per_sample:.0f} + {m.completion_tokens_per_sample:.0f} |",
        f"| cost (USD) total / per sample | {_fmt(m.cost_usd, 4)} / {_fmt(m.cost_per_sample_usd, 6)} |",
        *([f"| escalated to best-of-N by the planner (AgentM3D reports 69.1% on MMFakeBench, 77.2% on Combined) | "
           f"{100 * m.escalation.share:.1f}% ({m.escalation.escalated} of {m.escalation.planned}) |"] if m.escalation else []),
        "",
    ]
    if m.classification:
        lines += ["## Per class", "", "| label | precision | recall | F1 | support |", "|---|---|---|---|---|"]
        for label, s in m.classification.per_class.items():
            lines.append(f"| {label} | {s.precision:.3f} | {s.recall:.3f} | {s.f1:.3f} | {s.support} |")
        lines += ["", "## Confusion matrix (rows: gold, columns: predicted)", "",
                  "| gold \\ predicted | " + " | ".join(m.classification.confusion_columns) + " |",
                  "|---" * (len(m.classification.confusion_columns) + 1) + "|"]
        gold_rows = [label for label in m.classification.labels if m.classification.per_class[label].support]
        for label, counts in zip(gold_rows, m.classification.confusion):
            lines.append(f"| {label} | " + " | ".join(str(c) for c in counts) + " |")
        lines.append("")
    if m.difficulty:
        lines += ["## Difficulty (AgentFact's App. D: gold-evidence items cited by the human fact-check)", "",
                  "| gold evidence items | samples | accuracy | macro-F1 | true vs not true macro-F1 |", "|---|---|---|---|---|"]
        lines += [f"| {b.bin} | {b.samples} | {b.accuracy:.3f} | {b.macro_f1:.3f} | {_fmt(b.true_vs_not_true_macro_f1)} |"
                  for b in m.difficulty]
        lines.append("")
    if m.fake_class is not None:
        f = m.fake_class
        lines += ["## Fake class (FactGuard's Table 1 layout, %)", "", "| Acc | Prec | Rec | F1 |", "|---|---|---|---|",
                  f"| {100 * f.accuracy:.1f} | {100 * f.precision:.1f} | {100 * f.recall:.1f} | {100 * f.f1:.1f} |", ""]
    if m.tools is not None:
        t = m.tools
        lines += ["## Tool use", "", "| figure | value |", "|---|---|",
                  f"| samples using any tool | {t.share_using_tools:.3f} of {t.samples} |",
                  *[f"| mean {name} calls per sample | {value:.2f} |" for name, value in t.mean_calls.items()],
                  *[f"| {name} calls refused (budget) | {count} |" for name, count in t.refusals.items()],
                  f"| mean model turns | {t.mean_turns:.2f} |",
                  f"| tokens per sample | {t.tokens_per_sample:.0f} |",
                  f"| latency per sample (s) | {t.latency_per_sample_s:.2f} |", ""]
    if man.departures:
        lines += ["## Departures from the paper", "",
                  "Listed by the configuration, or detected from the run's settings and its rows (the same list as run.json):",
                  "", *[f"- {d.line()}{' (detected)' if d.origin == 'detected' else ''}" for d in man.departures], ""]
    if m.error_types:
        lines += ["## Failed samples", "", *[f"- {name}: {count}" for name, count in m.error_types.items()], ""]
    if man.load_report is not None and man.load_report.skipped:
        lines += ["## Rows the loader left out", "", *[f"- {reason}: {n}" for reason, n in man.load_report.skipped.items()], ""]
    if not m.scored:
        lines += [NO_PLOTS, ""]
    elif summary.gold == "annotations":
        lines += [f"![confusion matrix]({ANNOTATED_CONFUSION})", ""]
    else:
        lines += ["![confusion matrix](confusion.png)", "", "![accuracy vs latency](accuracy_vs_latency.png)", "",
                  "![accuracy vs cost](accuracy_vs_cost.png)", ""]
    return "\n".join(lines)


NO_PLOTS = ("No plots: no sample of this run has a gold label (a saved debate on a post of your own has none), so "
            "there is nothing to score; a confusion matrix and accuracy plots would be empty.")


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_confusion(summary: RunSummary, folder: OwnedFolder, name: str) -> None:
    plt = _pyplot()
    scores = summary.metrics.classification
    fig, ax = plt.subplots(figsize=(6, 5))
    if scores is None or not scores.confusion:
        ax.text(0.5, 0.5, "no scored samples", ha="center", va="center")
        ax.set_axis_off()
    else:
        gold_rows = [label for label in scores.labels if scores.per_class[label].support]
        ax.imshow(scores.confusion, cmap="Blues")
        ax.set_xticks(range(len(scores.confusion_columns)), [tick_label(c) for c in scores.confusion_columns], fontsize=8)
        ax.set_yticks(range(len(gold_rows)), [tick_label(r) for r in gold_rows], fontsize=8)
        for i, counts in enumerate(scores.confusion):
            for j, count in enumerate(counts):
                ax.text(j, i, str(count), ha="center", va="center")
        ax.set_xlabel("predicted")
        ax.set_ylabel("gold")
    ax.set_title(run_label(summary))
    fig.tight_layout()
    save_figure(fig, folder, name, dpi=120)
    plt.close(fig)


def tick_label(label: str) -> str:
    """A class name on a plot axis: words on lines of their own, so that long M3D labels do not run into each other."""
    return label.replace("_", "\n") if len(label) > 12 else label


MARKERS = "osD^vP*X<>"


def save_figure(fig: Any, folder: OwnedFolder, name: str, dpi: int) -> None:
    """A figure as the PNG file ``name`` of ``folder``, written as every run-folder file is (never through a link)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    folder.write(name, buffer.getvalue())


def plot_tradeoffs(summaries: Sequence[RunSummary], folder: OwnedFolder) -> list[Path]:
    """Accuracy against p50 latency and against cost per sample, one point per run.

    Runs are told apart by colour and marker in a legend below the axes: labels written beside the
    points ran into one another wherever runs land close together, as small runs often do."""
    plt = _pyplot()
    written = []
    for name, attribute, xlabel in (
        ("accuracy_vs_latency.png", "latency_p50_s", "median latency per sample (s)"),
        ("accuracy_vs_cost.png", "cost_per_sample_usd", "cost per sample (USD)"),
    ):
        fig, ax = plt.subplots(figsize=(6.4, 4.8))
        shown = 0
        left_out = []
        for i, s in enumerate(summaries):
            x = getattr(s.metrics, attribute)
            label = f"{run_label(s)} ({Path(s.path).name})"
            if s.metrics.classification is None or x is None:
                if attribute == "latency_p50_s" and s.metrics.cached_rows:
                    left_out.append(f"{label}: every sample from the response cache, no model timed")
                continue
            if attribute == "latency_p50_s" and s.metrics.cached_rows:
                label += (f"; latency over {s.metrics.latency_rows} of {s.metrics.latency_rows + s.metrics.cached_rows}"
                          " samples, the rest from the cache")
            y = s.metrics.classification.accuracy
            ax.scatter([x], [y], marker=MARKERS[i % len(MARKERS)], s=48, alpha=0.85, label=label)
            shown += 1
        if left_out:
            fig.text(0.01, 0.01, "not shown: " + "; ".join(left_out), fontsize=7, ha="left", va="bottom", wrap=True)
        ax.set_xlabel(xlabel)
        ax.set_ylabel("accuracy")
        ax.set_title(f"accuracy vs {xlabel.split(' per')[0].split(' (')[0]}")
        ax.grid(alpha=0.3)
        if shown:
            ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.16), fontsize=7, frameon=False,
                      ncol=1 if shown < 4 else 2)
        fig.tight_layout()
        save_figure(fig, folder, name, dpi=120)
        plt.close(fig)
        written.append(folder.path(name))
    return written


def sibling_runs(run_dir: Path) -> list[Path]:
    """The other run folders beside ``run_dir`` (folders holding a ``run.json``)."""
    here = run_dir.resolve()
    try:
        return sorted(p for p in here.parent.iterdir()
                      if p.resolve() != here and p.is_dir() and os.path.lexists(p / MANIFEST))
    except OSError:
        return []


def sibling_summaries(run_dir: Path) -> tuple[list[RunSummary], list[str]]:
    """Every readable sibling run's summary, and one line for each sibling that could not be read.

    A neighbour is only there for the trade-off plots: one whose ``run.json`` is garbage or whose
    ``results.jsonl`` was edited by hand is named and left out, never a reason for this run's report
    (or a finished evaluation) to fail."""
    summaries, left_out = [], []
    for sibling in sibling_runs(run_dir):
        try:
            summaries.append(summarise(sibling))
        except Exception as exc:  # noqa: BLE001 - whatever is wrong with a neighbour costs that neighbour alone
            why = str(exc) if isinstance(exc, InputError) else f"{type(exc).__name__}: {exc}"
            left_out.append(f"left the neighbouring run {sibling} out of the trade-off plots: {one_line(why)}")
    return summaries, left_out


def write_reviews(run_dir: Path, folder: OwnedFolder | None = None) -> int:
    """One review record per explained verdict, ``reviews/<sample id>.json``, in the fields of AgentFact's
    human review (label, reasons, key points with evidence ids, evidence list, image findings, confidence)."""
    _, rows = load_run(run_dir)
    folder = folder if folder is not None else OwnedFolder(run_dir)
    written = 0
    for row in rows:
        if not row.verdict or not row.verdict.get("explanation"):
            continue
        record = Verdict.model_validate(row.verdict).review_record()
        folder.write_json(f"{REVIEWS}/{safe_name(row.sample_id)}.json", record)
        written += 1
    return written


def safe_name(sample_id: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in sample_id) or "sample"


def record_outcome(folder: OwnedFolder, summary: RunSummary) -> None:
    """Write what the run found about itself that ``run.json`` carries (the planner's escalation),
    replacing the manifest atomically; the run's identity is left as it was."""
    if summary.manifest.escalation == summary.metrics.escalation:
        return
    manifest = summary.manifest.model_copy(update={"escalation": summary.metrics.escalation})
    folder.write_json(MANIFEST, manifest)
    summary.manifest = manifest


def write_report(run_dir: Path, gold: GoldSource = "dataset", folder: OwnedFolder | None = None) -> RunSummary:
    """Metrics, report and plots of a run. Scored against the annotations, they go to files of their
    own (``report.annotations.md`` ...), so the report on the data set's labels is never replaced.
    ``folder`` is how the run folder is written (the run folder itself unless a caller made it inside another)."""
    folder = folder if folder is not None else OwnedFolder(run_dir)
    if gold == "annotations":
        summary = summarise(run_dir, gold)
        folder.write_json(ANNOTATED_METRICS, summary)
        folder.write(ANNOTATED_REPORT, markdown(summary))
        if summary.metrics.scored:
            plot_confusion(summary, folder, ANNOTATED_CONFUSION)
        return summary
    summary = summarise(run_dir)
    record_outcome(folder, summary)
    write_reviews(run_dir, folder)
    folder.write_json(METRICS, summary)
    folder.write(REPORT, markdown(summary))
    if not summary.metrics.scored:  # nothing to plot: see NO_PLOTS
        return summary
    plot_confusion(summary, folder, "confusion.png")
    others, summary.left_out = sibling_summaries(run_dir)
    plot_tradeoffs([summary, *others], folder)
    return summary
