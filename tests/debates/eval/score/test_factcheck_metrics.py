"""AgentFact's scores: weighted precision and recall, and its true-vs-not-true view, on a fixed list.

The constants were computed once with scikit-learn (``precision_recall_fscore_support`` with
``labels=["true", "false", "unproven"]`` and ``zero_division=0``) and frozen here, so the test
needs no scikit-learn and catches any drift in our own implementation.
"""

from __future__ import annotations

import pytest

from debates.eval.score.metrics import ABSTAIN, classification_scores, compute_metrics
from debates.eval.records import EvalRow
from m3d_agents.labels import collapse_label, get_taxonomy
from tests.support.diagnostics import agentfact_diagnostics

GOLD = ["true", "false", "false", "unproven", "false", "true", "false", "unproven", "false", "true", "false", "false"]
PRED = ["true", "false", "unproven", "unproven", "false", "false", "false", "true", ABSTAIN, "true", "false", "unproven"]
LABELS = ["true", "false", "unproven"]


def rows(taxonomy: str = "factcheck") -> list[EvalRow]:
    return [
        EvalRow(
            sample_id=f"s{i}", index=i, seed=0, status="abstained" if p == ABSTAIN else "ok", taxonomy=taxonomy, gold=g,
            label=None if p == ABSTAIN else p, config="agentfact-bounded", backend="scripted",
        )
        for i, (g, p) in enumerate(zip(GOLD, PRED))
    ]


def test_weighted_and_macro_scores_equal_the_frozen_sklearn_figures() -> None:
    scores = classification_scores(GOLD, PRED, LABELS + [ABSTAIN])
    assert scores.weighted_precision == pytest.approx(0.688888888888889)
    assert scores.weighted_recall == pytest.approx(0.5833333333333334)
    assert scores.weighted_f1 == pytest.approx(0.6222222222222221)
    assert scores.macro_f1 == pytest.approx(0.5777777777777778)
    assert scores.accuracy == pytest.approx(0.5833333333333334)
    expected = {"true": (2 / 3, 2 / 3, 2 / 3, 3), "false": (0.8, 4 / 7, 2 / 3, 7), "unproven": (1 / 3, 0.5, 0.4, 2)}
    for label, (precision, recall, f1, support) in expected.items():
        got = scores.per_class[label]
        assert (got.precision, got.recall, got.f1, got.support) == pytest.approx((precision, recall, f1, support))


def test_weighted_recall_is_the_accuracy() -> None:
    scores = classification_scores(GOLD, PRED, LABELS + [ABSTAIN])
    assert scores.weighted_recall == pytest.approx(scores.accuracy)


def test_true_vs_not_true_counts_unproven_as_not_true() -> None:
    metrics = compute_metrics(rows(), "factcheck")
    view = metrics.true_vs_not_true
    assert view is not None
    assert view.accuracy == pytest.approx(0.75)
    assert view.macro_f1 == pytest.approx(0.7450980392156863)
    assert view.per_class["not_true"].support == 9
    # the misinformation view differs: there, unproven is not misinformation
    assert metrics.binary is not None and metrics.binary.accuracy != view.accuracy


def test_taxonomies_without_a_true_rating_have_no_true_vs_not_true_view() -> None:
    binary = [r.model_copy(update={"taxonomy": "binary", "gold": "real", "label": "real"}) for r in rows()]
    assert compute_metrics(binary, "binary").true_vs_not_true is None


def test_factcheck3_answers_are_factcheck_labels_unchanged() -> None:
    three, five = get_taxonomy("factcheck3"), get_taxonomy("factcheck")
    assert [collapse_label(label, three, five) for label in three.labels] == ["true", "false", "unproven"]
    assert collapse_label("unproven", three, get_taxonomy("binary")) == "real"
    with pytest.raises(ValueError):
        collapse_label("mixture", five, three)


def test_citation_validity_counts_ids_before_clean_up_and_leakage_sums_per_rule() -> None:
    explained = rows()[:2]
    explained[0].verdict = {
        "explanation": {"key_points": [{"text": "a", "evidence_ids": ["ev-1", "ev-2"]}], "dropped_citations": 1},
        "diagnostics": agentfact_diagnostics({"factcheck_domain": 2, "factcheck_path": 1}).model_dump(mode="json"),
    }
    explained[1].verdict = {
        "explanation": {"key_points": [{"text": "b", "evidence_ids": ["ev-3"]}], "dropped_citations": 0},
        "diagnostics": agentfact_diagnostics({"factcheck_domain": 1, "after_claim_date": 1}).model_dump(mode="json"),
    }
    metrics = compute_metrics(explained, "factcheck")
    assert metrics.citation_validity == pytest.approx(3 / 4) and metrics.cited_ids == 4
    assert metrics.leakage == {"factcheck_domain": 3, "factcheck_path": 1, "after_claim_date": 1}
    assert compute_metrics(rows(), "factcheck").citation_validity is None


def test_citation_validity_counts_every_answer_the_explainer_gave_retries_included() -> None:
    explained = rows()[:2]
    explained[0].verdict = {"explanation": {
        "key_points": [{"text": "a", "evidence_ids": ["ev-1", "ev-2"]}], "dropped_citations": 0,
        "cited_all_answers": 3, "unknown_all_answers": 1,
    }}
    explained[1].verdict = {"explanation": {"key_points": [{"text": "b", "evidence_ids": ["ev-3"]}], "dropped_citations": 0}}
    metrics = compute_metrics(explained, "factcheck")
    assert metrics.cited_ids == 4, "the first row's retried answer counts; the older row keeps its final answer's ids"
    assert metrics.citation_validity == pytest.approx(3 / 4), "an unknown id a retry corrected still counts against it"


def test_leakage_shares_and_undated_pages_come_from_the_evidence_reports() -> None:
    reported = rows()[:2]
    reported[0].verdict = {"evidence_report": {"mode": "live", "kept": 6, "dropped": 4, "pages_kept": 5, "undated_pages_kept": 2,
                                               "dropped_why": {"factcheck_substring": 2, "undated": 1, "duplicate": 1}}}
    reported[1].verdict = {"evidence_report": {"mode": "live", "kept": 8, "dropped": 2, "pages_kept": 5, "undated_pages_kept": 0,
                                               "dropped_why": {"after_claim_date": 2}}}
    metrics = compute_metrics(reported, "factcheck")
    assert metrics.looked_at == 20
    assert metrics.leakage_share["factcheck_substring"] == pytest.approx(0.1)
    assert metrics.leakage_share["undated"] == pytest.approx(0.05) and metrics.leakage_share["after_claim_date"] == pytest.approx(0.1)
    assert metrics.leakage_share["factcheck_domain"] == 0.0 and "duplicate" not in metrics.leakage_share
    assert metrics.undated_kept_share == pytest.approx(0.2)


def test_difficulty_bins_group_rows_by_the_human_fact_checks_evidence_count() -> None:
    counted = rows()
    for row, count in zip(counted, [1, 2, 4, 5, 6, 7, 9, 12, 3, 0, 8, 10]):
        row.gold_evidence = count
    bins = {b.bin: b for b in compute_metrics(counted, "factcheck").difficulty}
    assert list(bins) == ["0-3", "4-6", "7-8", "9+"]
    assert [bins[b].samples for b in bins] == [4, 3, 2, 3]
    low = [(g, p) for (g, p), n in zip(zip(GOLD, PRED), [1, 2, 4, 5, 6, 7, 9, 12, 3, 0, 8, 10]) if n <= 3]
    expected = classification_scores([g for g, _ in low], [p for _, p in low], LABELS + [ABSTAIN])
    assert bins["0-3"].macro_f1 == pytest.approx(expected.macro_f1) and bins["0-3"].accuracy == pytest.approx(expected.accuracy)
    assert bins["0-3"].true_vs_not_true_macro_f1 is not None
    assert compute_metrics(rows(), "factcheck").difficulty == [], "no bins without the data set's evidence counts"


def test_the_report_shows_the_difficulty_bins_and_the_leakage_shares(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from debates.eval.records import RunManifest
    from debates.eval.score.report import RunSummary, markdown

    counted = rows()
    for row, count in zip(counted, [1, 2, 4, 5, 6, 7, 9, 12, 3, 0, 8, 10]):
        row.gold_evidence = count
        row.verdict = {"evidence_report": {"mode": "live", "kept": 2, "dropped": 1, "pages_kept": 2, "undated_pages_kept": 1,
                                           "dropped_why": {"undated": 1}}}
    manifest = RunManifest.model_construct(config="agentfact", dataset="rwpost", backend="scripted", seed=0,
                                           taxonomy="factcheck", created="now")
    text = markdown(RunSummary(path=str(tmp_path), manifest=manifest, metrics=compute_metrics(counted, "factcheck")))
    assert "## Difficulty (AgentFact's App. D" in text and "| 4-6 | 3 |" in text
    assert "undated 0.333" in text and "share of the kept pages | 0.500" in text
