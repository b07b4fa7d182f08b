"""What ``m3d reproduce`` writes and prints: the table as cells, ``table.md``, ``table.json`` and a plot.

One function (:func:`cells`) turns a :class:`~debates.eval.papers.reproduce.TableResult` into the text of
every cell, so the printed table and ``table.md`` cannot disagree. Each paper row takes one line
per metric: our figure with its 95% interval, the paper's figure (or why there is none), the
difference, and, on the row's first line, what a sample cost in model calls, tokens and dollars.
"""

from __future__ import annotations

from pathlib import Path

from debates.eval.papers.reproduce import TABLE_JSON, TABLE_MD, TABLE_PLOT, RowResult, TableResult
from debates.eval.papers.table_figures import METRICS
from debates.eval.score.report import save_figure
from m3d_agents.safe_files import OwnedFolder

COLUMNS = ["paper row", "paper's backbone (= ours?)", "config", "metric", "ours [95% CI]", "paper", "ours - paper",
           "calls/sample", "tokens/sample (in + out)", "$/sample", "no evidence (% samples)", "tools unavailable (% calls)"]
NOT_RUN = "not run (no configuration)"
ESCALATION = "escalated to best-of-N (paper)"


def columns(result: TableResult) -> list[str]:
    """The table's columns: :data:`COLUMNS`, and the planner's escalation where a row has a planner or the paper gives one."""
    return COLUMNS + ([ESCALATION] if _escalates(result) else [])


def _escalates(result: TableResult) -> bool:
    return any(r.escalated is not None or r.paper_escalated is not None for r in result.rows)


def _escalation(result: TableResult, row: RowResult) -> str:
    if row.escalated is None and row.paper_escalated is None:
        return ""
    places = 1 if result.scale == "percent" else 3
    unit = "%" if result.scale == "percent" else ""
    ours = "n/a" if row.escalated is None else f"{row.escalated:.{places}f}{unit}"
    paper = "not given" if row.paper_escalated is None else f"{row.paper_escalated:.{places}f}{unit}"
    return f"{ours} ({paper})"


def digits(result: TableResult, metric: str) -> int:
    places = METRICS[metric].places
    if places is not None:
        return places
    return 1 if result.scale == "percent" else 3


def _number(value: float | None, places: int, signed: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.{places}f}" if signed else f"{value:.{places}f}"


def _backbone(row: RowResult) -> str:
    mark = {True: "yes", False: "no", None: "?"}[row.same_backbone]
    return f"{row.backbone or 'not transcribed'} ({mark})"


def _paper(row: RowResult, metric: str, places: int) -> str:
    value = row.paper.get(metric)
    if value is not None:
        return _number(value, places)
    return row.missing.shown() if row.missing is not None else "n/a"


def _ours(row: RowResult, metric: str, places: int) -> str:
    figure = row.ours.get(metric)
    if figure is None or figure.value is None:
        return "n/a (no scored sample)"
    interval = f" [{_number(figure.low, places)}, {_number(figure.high, places)}]" if figure.low is not None else ""
    return _number(figure.value, places) + interval


def _percent(share: float | None, none: str) -> str:
    return none if share is None else f"{100 * share:.0f}%"


def _costs(row: RowResult) -> list[str]:
    if row.status == "no configuration":
        return ["", "", "", "", ""]
    tokens = f"{row.prompt_tokens_per_sample or 0:.0f} + {row.completion_tokens_per_sample or 0:.0f}"
    return [_number(row.calls_per_sample, 1), tokens, _number(row.cost_per_sample_usd, 4),
            _percent(row.no_evidence_share, "n/a"), _percent(row.unavailable_share, "no tool calls")]


def cells(result: TableResult) -> list[list[str]]:
    """Every line of the table as strings, in :func:`columns` order."""
    lines = []
    extra = _escalates(result)
    for row in result.rows:
        label = row.label + (f" ({row.status}: {row.samples} samples)" if row.status == "incomplete" else "")
        for position, metric in enumerate(result.metrics):
            places = digits(result, metric)
            first = position == 0
            title = METRICS[metric].title
            paper = _paper(row, metric, places)
            if row.status == "no configuration":
                ours, difference = (NOT_RUN if first else ""), ""
            else:
                ours = _ours(row, metric, places)
                diff = row.difference.get(metric)
                difference = _number(diff.value, places, signed=True) if diff is not None else "n/a"
            head = [label, _backbone(row), row.config or "-"] if first else ["", "", ""]
            tail = _costs(row) if first else ["", "", "", "", ""]
            if extra:
                tail.append(_escalation(result, row) if first else "")
            lines.append([*head, title, ours, paper, difference, *tail])
    return lines


def markdown(result: TableResult) -> str:
    out = [f"# {result.header[0]}", ""]
    out += [f"- {line}" for line in result.header[1:]]
    heads = columns(result)
    out += ["", "| " + " | ".join(heads) + " |", "|" + "---|" * len(heads)]
    out += ["| " + " | ".join(cell.replace("|", "/") for cell in line) + " |" for line in cells(result)]
    out.append("")
    errors = [f"{r.id}: {r.errors} failed, {r.abstained} abstained of {r.samples}" for r in result.rows
              if r.status != "no configuration" and (r.errors or r.abstained)]
    if errors:
        out += ["Failed and abstained samples count as wrong:", "", *[f"- {e}" for e in errors], ""]
    missing = {r.missing.note for r in result.rows if r.missing is not None}
    if missing:
        out += ["## Numbers not in this table", "", *[f"- {note}" for note in sorted(missing)], ""]
    if result.notes:
        out += ["## Notes", "", *[f"- {note}" for note in result.notes], ""]
    runs = [f"- `{r.config}`: {r.run_dir}" for r in {r.config: r for r in result.rows if r.run_dir}.values()]
    if runs:
        out += ["## Runs (each with its report.md)", "", *runs, ""]
    out += [f"![ours against the paper's]({TABLE_PLOT})", ""]
    return "\n".join(out)


def plot(result: TableResult, folder: OwnedFolder, name: str) -> None:
    """Ours (with the 95% interval) against the paper's figure, per row, one panel per metric."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    names = [f"{r.label} [{r.backbone or '?'}]" for r in result.rows]
    y = np.arange(len(result.rows))
    fig, axes = plt.subplots(1, len(result.metrics), figsize=(4.2 * len(result.metrics) + 2.5, 0.45 * len(y) + 1.6),
                             sharey=True, squeeze=False)
    for ax, metric in zip(axes[0], result.metrics):
        ours = [r.ours[metric].value if metric in r.ours and r.ours[metric].value is not None else np.nan for r in result.rows]
        low = [r.ours[metric].low if metric in r.ours and r.ours[metric].low is not None else np.nan for r in result.rows]
        high = [r.ours[metric].high if metric in r.ours and r.ours[metric].high is not None else np.nan for r in result.rows]
        paper = [np.nan if r.paper.get(metric) is None else float(r.paper[metric] or 0.0) for r in result.rows]
        ours_a, low_a, high_a = np.array(ours, float), np.array(low, float), np.array(high, float)
        error = np.vstack([np.nan_to_num(ours_a - low_a), np.nan_to_num(high_a - ours_a)])
        ax.barh(y - 0.2, ours_a, height=0.4, xerr=error, label="ours (95% CI)", color="#4c72b0", capsize=2)
        ax.barh(y + 0.2, np.array(paper, float), height=0.4, label="paper", color="#dd8452")
        for position, value in enumerate(paper):
            if np.isnan(value):
                ax.text(0, position + 0.2, " paper: n/a", va="center", fontsize=7, color="#dd8452")
        if METRICS[metric].rate:
            ax.set_xlim(0, 100 if result.scale == "percent" else 1)
        ax.set_title(METRICS[metric].title)
        ax.grid(axis="x", alpha=0.3)
    axes[0][0].set_yticks(y, names, fontsize=8)
    axes[0][0].invert_yaxis()
    axes[0][-1].legend(loc="lower right", fontsize=8)
    fig.suptitle(f"{result.paper} {result.header[0].split(':')[0].split(' ', 1)[-1]}: ours against the paper's"
                 + ("" if result.setting.papers_setting else " (not the paper's setting)"), fontsize=10)
    fig.tight_layout()
    save_figure(fig, folder, name, dpi=110)
    plt.close(fig)


def write_table(result: TableResult, folder: Path) -> list[Path]:
    written = OwnedFolder(folder).create()
    written.write_json(TABLE_JSON, result)
    written.write(TABLE_MD, markdown(result))
    plot(result, written, TABLE_PLOT)
    return [folder / TABLE_JSON, folder / TABLE_MD, folder / TABLE_PLOT]
