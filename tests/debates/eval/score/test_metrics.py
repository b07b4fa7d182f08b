"""Metrics against scikit-learn on known vectors, and the paired bootstrap."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.calibration import calibration_curve
from sklearn.metrics import accuracy_score, confusion_matrix, f1_score, precision_recall_fscore_support

from debates.eval.score.compare import paired_bootstrap
from debates.eval.score.metrics import ABSTAIN, FAILED, classification_scores, compute_metrics, expected_calibration_error
from debates.eval.records import EvalRow
from m3d_agents.labels import get_taxonomy

M3D = get_taxonomy("m3d").labels
GOLD = ["original", "original", "textual_veracity_distortion", "visual_veracity_distortion",
        "cross_modal_consistency_distortion", "original", "visual_veracity_distortion", "textual_veracity_distortion",
        "cross_modal_consistency_distortion", "original"]
PRED = ["original", "textual_veracity_distortion", "textual_veracity_distortion", ABSTAIN,
        "original", "original", "visual_veracity_distortion", "cross_modal_consistency_distortion",
        "cross_modal_consistency_distortion", ABSTAIN]


def test_classification_scores_match_sklearn() -> None:
    scores = classification_scores(GOLD, PRED, M3D + [ABSTAIN])
    assert scores.labels == M3D
    assert scores.accuracy == pytest.approx(accuracy_score(GOLD, PRED))
    assert scores.macro_f1 == pytest.approx(f1_score(GOLD, PRED, labels=M3D, average="macro", zero_division=0))
    assert scores.weighted_f1 == pytest.approx(f1_score(GOLD, PRED, labels=M3D, average="weighted", zero_division=0))
    precision, recall, f1, support = precision_recall_fscore_support(GOLD, PRED, labels=M3D, zero_division=0)
    for i, label in enumerate(M3D):
        got = scores.per_class[label]
        assert (got.precision, got.recall, got.f1, got.support) == pytest.approx((precision[i], recall[i], f1[i], support[i]))
    expected = confusion_matrix(GOLD, PRED, labels=M3D + [ABSTAIN])[: len(M3D)]
    assert scores.confusion == expected.tolist()
    assert scores.confusion_columns == M3D + [ABSTAIN]


def test_ece_matches_a_reliability_curve_from_sklearn() -> None:
    rng = np.random.default_rng(3)
    confidence = rng.uniform(0.3, 1.0, 400).round(2)
    correct = rng.uniform(0, 1, 400) < confidence ** 2
    prob_true, prob_pred = calibration_curve(correct, confidence, n_bins=10, strategy="uniform")
    counts = np.bincount(np.searchsorted(np.linspace(0, 1, 11)[1:-1], confidence), minlength=10)
    counts = counts[counts > 0]
    expected = float(np.sum(counts / counts.sum() * np.abs(prob_true - prob_pred)))
    assert expected_calibration_error(confidence, correct) == pytest.approx(expected)
    assert expected_calibration_error([1.0, 1.0], [True, True]) == 0.0
    assert expected_calibration_error([0.9, 0.9], [False, False]) == pytest.approx(0.9)


def row(i: int, gold: str | None, label: str | None, status: str = "ok", confidence: float | None = 0.8,
        latency: float = 1.0, cost: float | None = 0.01, calls: int = 3) -> EvalRow:
    taxonomy = get_taxonomy("binary")
    return EvalRow(
        sample_id=f"s{i}", index=i, seed=i, status=status, taxonomy="binary", gold=gold, label=label,  # type: ignore[arg-type]
        gold_misinformation=taxonomy.is_misinformation(gold) if gold else None,
        is_misinformation=taxonomy.is_misinformation(label) if label else None,
        confidence=confidence if label else None, latency_s=latency, model_calls=calls, prompt_tokens=100,
        completion_tokens=20, cost_usd=cost, config="check", backend="local",
        error={"type": "InputError", "message": "images[0]: missing", "field": "images[0]"} if status == "error" else None,
    )


def test_run_metrics_count_abstentions_and_errors_against_accuracy() -> None:
    rows = [row(0, "fake", "fake"), row(1, "fake", "real"), row(2, "real", "real", latency=3.0),
            row(3, "real", None, status="abstained"), row(4, "real", None, status="error", cost=0.0, calls=0),
            row(5, None, "fake")]
    m = compute_metrics(rows, "binary")
    assert (m.samples, m.scored, m.errors, m.abstained) == (6, 5, 1, 1)
    assert m.classification.accuracy == pytest.approx(2 / 5), "every attempted sample with a gold label counts"
    assert m.classification.confusion_columns == ["real", "fake", ABSTAIN, FAILED]
    assert m.selective_accuracy == pytest.approx(2 / 3)
    assert m.abstention_rate == pytest.approx(1 / 5) and m.coverage == pytest.approx(4 / 6)
    assert m.binary.labels == ["misinformation", "not_misinformation"]
    assert m.binary.accuracy == pytest.approx(2 / 5)
    assert m.latency_p50_s == pytest.approx(1.0) and m.latency_p95_s == pytest.approx(np.percentile([1, 1, 3, 1, 1], 95))
    assert m.calls_per_sample == pytest.approx(3.0)
    assert m.cost_usd == pytest.approx(0.05) and m.cost_per_sample_usd == pytest.approx(0.01)
    assert m.error_types == {"InputError": 1}


def test_latency_leaves_out_samples_answered_from_the_cache_and_says_how_many_and_how_long_calls_waited() -> None:
    from debates.eval.score.caveats import run_caveats
    from debates.eval.records import RunManifest

    rows = [row(0, "fake", "fake", latency=0.01), row(1, "real", "real", latency=0.02),
            row(2, "fake", "fake", latency=40.0), row(3, "real", "fake", latency=60.0)]
    for r in rows[:2]:
        r.cache_hits = r.model_calls  # every call answered from the cache
    rows[2].model_s, rows[2].wait_s = 10.0, 30.0
    rows[3].model_s, rows[3].wait_s = 14.0, 46.0
    m = compute_metrics(rows, "binary")
    assert (m.cached_rows, m.latency_rows) == (2, 2)
    assert m.latency_p50_s == pytest.approx(50.0), "the cached rows' hundredths of a second are no model's time"
    assert m.model_s_per_sample == pytest.approx(12.0) and m.wait_s_per_sample == pytest.approx(38.0)
    manifest = RunManifest(config="check", backend="local", dataset="x", seed=0, created="now", taxonomy="binary")
    said = {c.kind: c.text for c in run_caveats(manifest, rows)}
    assert "2 of 4 finished samples were answered wholly from the response cache" in said["cached"]
    assert "the latency is over the 2 that called a model" in said["cached"]
    assert "waited 38.0 s on average for a backend slot, against 50.0 s of wall time" in said["waiting"]

    cached_only = compute_metrics(rows[:2], "binary")
    assert cached_only.latency_p50_s is None and cached_only.cached_rows == 2
    assert "no latency to report" in {c.kind: c.text for c in run_caveats(manifest, rows[:2])}["cached"]
    old = compute_metrics([row(0, "fake", "fake")], "binary")  # a row from before the wait was measured
    assert old.wait_s_per_sample is None and old.cached_rows == 0


def test_unknown_prices_make_the_cost_unknown_not_zero() -> None:
    m = compute_metrics([row(0, "fake", "fake", cost=None), row(1, "real", "real")], "binary")
    assert m.cost_usd is None and m.cost_per_sample_usd is None


def test_paired_bootstrap_is_seeded_and_brackets_the_observed_difference() -> None:
    rng = np.random.default_rng(0)
    golds = rng.choice(["fake", "real"], 200)
    weak = [g if rng.uniform() < 0.6 else ("real" if g == "fake" else "fake") for g in golds]
    strong = [g if rng.uniform() < 0.85 else ("real" if g == "fake" else "fake") for g in golds]
    a = [row(i, g, p) for i, (g, p) in enumerate(zip(golds, weak))]
    b = [row(i, g, p) for i, (g, p) in enumerate(zip(golds, strong))]
    first = paired_bootstrap(["weak", "strong"], [a, b], "binary", resamples=1000, seed=7)[0]
    again = paired_bootstrap(["weak", "strong"], [a, b], "binary", resamples=1000, seed=7)[0]
    assert first == again
    observed = accuracy_score(golds, strong) - accuracy_score(golds, weak)
    assert first.accuracy.difference == pytest.approx(observed)
    assert first.accuracy.low < observed < first.accuracy.high
    assert first.accuracy.low > 0 and first.accuracy.p_not_better < 0.025
    f1_gap = f1_score(golds, strong, average="macro") - f1_score(golds, weak, average="macro")
    assert first.macro_f1.difference == pytest.approx(f1_gap)
    assert first.paired_samples == 200
