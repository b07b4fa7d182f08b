"""Compare runs on the same samples, with paired bootstrap confidence intervals on the differences.

Runs are paired on the sample ids that every run attempted with a gold label, so each
difference is measured on identical samples; a failed or abstained sample counts as not correct,
as in :mod:`debates.eval.score.metrics`. Resampling those ids with replacement, with the
same resample for both runs, gives the distribution of the difference in accuracy and in macro-F1;
the interval is its 2.5th to 97.5th percentile. The resampling is seeded, so the printed
intervals are reproducible.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from pydantic import BaseModel

from debates.eval.score.metrics import ABSTAIN
from debates.eval.records import EvalRow
from m3d_agents.errors import InputError
from m3d_agents.labels import get_taxonomy


class Interval(BaseModel):
    difference: float
    low: float
    high: float
    p_not_better: float


class PairedComparison(BaseModel):
    baseline: str
    other: str
    paired_samples: int
    accuracy: Interval
    macro_f1: Interval


def _encode(rows_by_run: Sequence[dict[str, EvalRow]], ids: list[str], labels: list[str]) -> tuple[np.ndarray, list[np.ndarray]]:
    code = {label: i for i, label in enumerate(labels)}
    gold = np.array([code[str(rows_by_run[0][i].gold)] for i in ids])
    preds = []
    for rows in rows_by_run:
        preds.append(np.array([code[rows[i].label or ABSTAIN] if rows[i].status == "ok" else code[ABSTAIN]
                               for i in ids]))
    return gold, preds


def bootstrap_scores(weights: np.ndarray, gold: np.ndarray, pred: np.ndarray, classes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Accuracy and macro-F1 for each row of ``weights`` (how often each sample is drawn)."""
    n = weights.sum(axis=1)
    accuracy = weights @ (gold == pred) / n
    f1s = []
    for c in classes:
        tp = weights @ ((gold == c) & (pred == c))
        fp = weights @ ((gold != c) & (pred == c))
        fn = weights @ ((gold == c) & (pred != c))
        denominator = 2 * tp + fp + fn
        f1s.append(np.divide(2 * tp, denominator, out=np.zeros_like(denominator, dtype=float), where=denominator > 0))
    return accuracy, np.mean(f1s, axis=0)


def _interval(point: float, samples: np.ndarray) -> Interval:
    low, high = np.percentile(samples, [2.5, 97.5])
    return Interval(difference=point, low=float(low), high=float(high), p_not_better=float(np.mean(samples <= 0)))


def paired_bootstrap(
    names: Sequence[str], runs: Sequence[Sequence[EvalRow]], taxonomy: str, *, resamples: int = 2000, seed: int = 0
) -> list[PairedComparison]:
    """Each run against the first one."""
    if len(runs) < 2:
        raise InputError("runs", "give at least two runs to compare")
    by_id = [{r.sample_id: r for r in rows if r.scored} for rows in runs]
    ids = sorted(set.intersection(*(set(rows) for rows in by_id)))
    if not ids:
        raise InputError("runs", "the runs have no scored sample in common; were they run on the same data set?")
    labels = get_taxonomy(taxonomy).labels + [ABSTAIN]
    gold, preds = _encode(by_id, ids, labels)
    present = set(gold.tolist())
    for p in preds:
        present |= set(p.tolist())
    classes = np.array(sorted(c for c in present if labels[c] != ABSTAIN))
    rng = np.random.default_rng(seed)
    weights = rng.multinomial(len(ids), np.full(len(ids), 1 / len(ids)), size=resamples)
    full = np.ones((1, len(ids)))
    base_acc, base_f1 = bootstrap_scores(weights, gold, preds[0], classes)
    base_acc_point, base_f1_point = bootstrap_scores(full, gold, preds[0], classes)
    comparisons = []
    for name, pred in zip(names[1:], preds[1:]):
        acc, f1 = bootstrap_scores(weights, gold, pred, classes)
        acc_point, f1_point = bootstrap_scores(full, gold, pred, classes)
        comparisons.append(PairedComparison(
            baseline=names[0], other=name, paired_samples=len(ids),
            accuracy=_interval(float(acc_point[0] - base_acc_point[0]), acc - base_acc),
            macro_f1=_interval(float(f1_point[0] - base_f1_point[0]), f1 - base_f1),
        ))
    return comparisons
