"""The figures of a reproduced table: each row's metrics with a 95% bootstrap interval over samples.

The metrics follow the conventions of :mod:`debates.eval.score.metrics` exactly (a failed or abstained
sample is a prediction of no class and counts as wrong; macro and weighted averages run over the
labels that occur in the gold labels or the predictions), so a row's point figure equals what the
run's own ``report.md`` says.

The interval is the 2.5th to 97.5th percentile of the metric over resamples of the samples, drawn
with replacement from a seeded generator. When every row holds the same samples (the usual case:
one data set, every run finished) the rows share one set of resamples, so the intervals are paired
and the rows' differences can be read against each other; a row with other samples (a run cut off
before its end) gets its own resamples and is marked unpaired.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal, Mapping, Sequence

import numpy as np
from pydantic import BaseModel

from debates.eval.score.metrics import NO_ANSWER, binary_name, predicted
from debates.eval.records import EvalRow
from m3d_agents.diagnostics import Diagnostics
from debates.strategies.t2agent.diagnostics import T2AgentDiagnostics

View = Literal["labels", "binary", "diagnostic", "cost"]
Average = Literal["accuracy", "macro", "weighted", "positive", "mean"]
Score = Literal["f1", "precision", "recall"]


@dataclass(frozen=True)
class MetricSpec:
    name: str
    title: str
    view: View
    average: Average
    score: Score = "f1"
    diagnostic: Callable[[Diagnostics], float | None] | None = None
    """For ``view == "diagnostic"``: a number read from each verdict's diagnostics (None where that verdict has
    none, a failed or another strategy's), averaged over the samples that have one."""
    factor: float = 1.0
    """For ``view == "cost"``: the mean dollars of a sample times this (1000: dollars per 1000 posts)."""
    places: int | None = None
    """Decimals shown; None: the table's scale decides (rates)."""

    @property
    def rate(self) -> bool:
        """A share of samples (accuracy, F1 ...), shown in percent on a percent table; the others are shown as they are."""
        return self.view in ("labels", "binary")


def search_iterations(diagnostics: Diagnostics) -> float | None:
    """T2Agent's search iterations for one post (Table 7's mean iterations); None for other strategies."""
    return float(diagnostics.iterations) if isinstance(diagnostics, T2AgentDiagnostics) else None


POSITIVE = "misinformation"
"""The positive class of the fake-class figures (FactGuard's Table 1 layout)."""

METRICS: dict[str, MetricSpec] = {m.name: m for m in [
    MetricSpec("accuracy", "Acc", "labels", "accuracy"),
    MetricSpec("macro_f1", "macro-F1", "labels", "macro", "f1"),
    MetricSpec("macro_precision", "macro-P", "labels", "macro", "precision"),
    MetricSpec("macro_recall", "macro-R", "labels", "macro", "recall"),
    MetricSpec("weighted_f1", "weighted F1", "labels", "weighted", "f1"),
    MetricSpec("weighted_precision", "weighted P", "labels", "weighted", "precision"),
    MetricSpec("weighted_recall", "weighted R", "labels", "weighted", "recall"),
    MetricSpec("binary_accuracy", "binary Acc", "binary", "accuracy"),
    MetricSpec("fake_precision", "fake P", "binary", "positive", "precision"),
    MetricSpec("fake_recall", "fake R", "binary", "positive", "recall"),
    MetricSpec("fake_f1", "fake F1", "binary", "positive", "f1"),
    MetricSpec("mean_iterations", "iterations", "diagnostic", "mean", diagnostic=search_iterations, places=2),
    MetricSpec("usd_per_1000_posts", "USD / 1000 posts", "cost", "mean", factor=1000.0, places=1),
]}


class Figure(BaseModel):
    """One metric of one run: its value on the run's samples and the bootstrap interval."""

    value: float | None
    low: float | None
    high: float | None
    samples: int


class RowFigures(BaseModel):
    figures: dict[str, Figure]
    paired: bool
    """Whether this row's resamples are the ones every other paired row used."""


@dataclass
class Encoded:
    """One run's samples as integer codes, in a fixed sample order."""

    gold: np.ndarray
    pred: np.ndarray
    classes: np.ndarray
    positive: int


def _encode(gold: Sequence[str], pred: Sequence[str], positive: str | None = None) -> Encoded:
    names = sorted(set(gold) | set(pred) | set(NO_ANSWER))
    code = {name: i for i, name in enumerate(names)}
    present = (set(gold) | set(pred)) - set(NO_ANSWER)
    return Encoded(
        gold=np.array([code[g] for g in gold], dtype=int),
        pred=np.array([code[p] for p in pred], dtype=int),
        classes=np.array(sorted(code[c] for c in present), dtype=int),
        positive=code.get(positive, -1) if positive is not None else -1,
    )


def _label_view(rows: Sequence[EvalRow]) -> Encoded:
    return _encode([str(r.gold) for r in rows], [predicted(r, r.label) for r in rows])


def _binary_view(rows: Sequence[EvalRow]) -> Encoded:
    return _encode([binary_name(r.gold_misinformation) for r in rows],
                   [predicted(r, binary_name(r.is_misinformation)) for r in rows], positive=POSITIVE)


def _ratio(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """numerator / denominator, 0 where the denominator is 0 (as sklearn's zero_division=0)."""
    return np.divide(numerator, denominator, out=np.zeros_like(numerator, dtype=float), where=denominator > 0)


def _per_class(weights: np.ndarray, data: Encoded, score: Score, klass: int) -> np.ndarray:
    g, p = data.gold, data.pred
    tp = weights @ ((g == klass) & (p == klass))
    fp = weights @ ((g != klass) & (p == klass))
    fn = weights @ ((g == klass) & (p != klass))
    if score == "precision":
        return _ratio(tp, tp + fp)
    if score == "recall":
        return _ratio(tp, tp + fn)
    return _ratio(2 * tp, 2 * tp + fp + fn)


def classification_metric(spec: MetricSpec, weights: np.ndarray, data: Encoded) -> np.ndarray:
    """The metric for each row of ``weights`` (how often each sample is drawn), one value per row."""
    weights = weights.astype(float)
    if spec.average == "accuracy":
        return _ratio(weights @ (data.gold == data.pred), weights.sum(axis=1))
    if spec.average == "positive":
        return _per_class(weights, data, spec.score, data.positive)
    if data.classes.size == 0:
        return np.zeros(weights.shape[0])
    scores = np.stack([_per_class(weights, data, spec.score, int(c)) for c in data.classes])
    if spec.average == "macro":
        return scores.mean(axis=0)
    supports = np.stack([weights @ (data.gold == c) for c in data.classes])
    return _ratio((scores * supports).sum(axis=0), supports.sum(axis=0))


def diagnostic_values(rows: Sequence[EvalRow], read: Callable[[Diagnostics], float | None]) -> tuple[np.ndarray, np.ndarray]:
    """Each row's number that ``read`` takes from its verdict's diagnostics, and whether it has one (failed rows have none)."""
    values, present = [], []
    for row in rows:
        diagnostics = row.diagnostics() if row.status != "error" else None
        number = read(diagnostics) if diagnostics is not None else None
        values.append(float(number) if number is not None else 0.0)
        present.append(1.0 if number is not None else 0.0)
    return np.array(values), np.array(present)


def cost_values(rows: Sequence[EvalRow]) -> tuple[np.ndarray, np.ndarray]:
    """Each row's dollars, and whether it has them (a failed row, or a backend without a price, has none)."""
    values = [float(r.cost_usd) if r.cost_usd is not None and r.status != "error" else 0.0 for r in rows]
    present = [1.0 if r.cost_usd is not None and r.status != "error" else 0.0 for r in rows]
    return np.array(values), np.array(present)


def metric_values(spec: MetricSpec, weights: np.ndarray, rows: Sequence[EvalRow]) -> np.ndarray | None:
    """The metric under each resample; None when no sample has what it needs."""
    if spec.view in ("diagnostic", "cost"):
        if spec.view == "cost":
            values, present = cost_values(rows)
        elif spec.diagnostic is None:
            raise ValueError(f"{spec.name} is a diagnostic metric without a reader")
        else:
            values, present = diagnostic_values(rows, spec.diagnostic)
        if not present.any():
            return None
        return _ratio(weights @ (values * present), weights @ present) * spec.factor
    scored = [r for r in rows if r.scored]
    if not scored:
        return None
    mask = np.array([r.scored for r in rows])
    data = _label_view(scored) if spec.view == "labels" else _binary_view(scored)
    if spec.average == "positive" and data.positive < 0:
        return None
    return classification_metric(spec, weights[:, mask], data)


def figures_of(rows: Sequence[EvalRow], metrics: Sequence[str], weights: np.ndarray) -> dict[str, Figure]:
    full = np.ones((1, len(rows)))
    out = {}
    for name in metrics:
        spec = METRICS[name]
        point = metric_values(spec, full, rows)
        spread = metric_values(spec, weights, rows)
        if point is None or spread is None:
            out[name] = Figure(value=None, low=None, high=None, samples=len(rows))
            continue
        low, high = np.percentile(spread, [2.5, 97.5])
        out[name] = Figure(value=float(point[0]), low=float(low), high=float(high), samples=len(rows))
    return out


def row_figures(
    runs: Mapping[str, Sequence[EvalRow]], metrics: Sequence[str], *, resamples: int = 2000, seed: int = 0
) -> dict[str, RowFigures]:
    """The figures of each run (keyed as ``runs``), paired where runs hold the same samples."""
    unknown = [m for m in metrics if m not in METRICS]
    if unknown:
        raise ValueError(f"unknown metrics {unknown}; known: {', '.join(METRICS)}")
    ordered = {key: sorted(rows, key=lambda r: r.sample_id) for key, rows in runs.items()}
    id_sets = {key: tuple(r.sample_id for r in rows) for key, rows in ordered.items()}
    common = max(id_sets.values(), key=lambda ids: sum(1 for other in id_sets.values() if other == ids), default=())
    shared = _weights(len(common), resamples, np.random.default_rng(seed)) if common else None
    result = {}
    for position, (key, rows) in enumerate(ordered.items()):
        paired = id_sets[key] == common and shared is not None
        if not rows:
            result[key] = RowFigures(figures={m: Figure(value=None, low=None, high=None, samples=0) for m in metrics},
                                     paired=False)
            continue
        weights = shared if paired else _weights(len(rows), resamples, np.random.default_rng([seed, position + 1]))
        assert weights is not None
        result[key] = RowFigures(figures=figures_of(rows, metrics, weights), paired=paired)
    return result


def _weights(n: int, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """How often each of ``n`` samples is drawn in each of ``resamples`` draws of ``n`` with replacement."""
    return rng.multinomial(n, np.full(n, 1 / n), size=resamples)

