"""Scores of a run, computed with numpy alone from the result rows.

Conventions, chosen so that a run cannot look better by refusing to answer:

* classification metrics use every attempted sample that has a gold label, failed ones included:
  an abstention is a prediction of no class (column ``(abstained)``) and a failed sample one of
  column ``(failed)``, so both count against recall and accuracy; a run with many backend errors
  cannot report the accuracy of the samples that happened to succeed;
* ``coverage`` is the share of attempted samples that got an answer (neither abstained nor
  failed), and ``selective_accuracy`` the accuracy over those answered samples only;
* errors are also counted in ``errors``, with their types; calls and cost are over the samples
  that finished, latency over those that called a model: a sample whose every call was answered
  from the response cache (``cached_rows``) took no model's time, and would make a run look fast;
  ``model_s_per_sample`` and ``wait_s_per_sample`` split a sample's time into what the backends
  spent answering and what its calls waited for a slot (the embedded model answers one call at a
  time, so at ``--concurrency 8`` most of a sample's wall time is waiting), summed over its calls;
* macro averages run over the taxonomy labels that occur in the gold labels or the predictions;
* ECE uses equal-width confidence bins closed on the right, ``(a, b]`` (the first also holds 0),
  over answered samples that report a confidence;
* weighted precision, recall and F1 weight each label by its gold support, as the AgentFact paper
  reports them (weighted recall is then the accuracy);
* ``true_vs_not_true`` is AgentFact's binary view for fact-check taxonomies: the true rating
  against every other one, unproven included. It is not the misinformation view of ``binary``,
  where unproven counts as not misinformation; the two are named apart and never compared;
* ``citation_validity`` is the share of evidence ids cited by explanations that exist in the
  evidence shown, over every answer the explainer gave, retries included (an unknown id that a
  retry corrected still counts against it; rows written before this was counted fall back to the
  final answer's ids and the ids removed from it); leakage counts are summed per rule over the
  verdicts that report them;
* ``leakage_share`` is each leakage rule's drops over the evidence items retrieval looked at, and
  ``undated_kept_share`` the share of the kept pages (items with a URL) that carry no publication
  date, which the date rule could not check, both from the verdicts' evidence reports;
* ``difficulty`` is AgentFact's App. D: the scores of the rows grouped by how many evidence items
  the data set's human fact-check cites (:data:`DIFFICULTY_BINS`), for data sets that give them.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
from pydantic import BaseModel, Field

from debates.eval.records import Escalation, EvalRow
from debates.strategies.agentfact.diagnostics import AgentFactDiagnostics
from debates.debate_engine.diagnostics import DebateDiagnostics
from debates.strategies.factguard.diagnostics import FactGuardDiagnostics
from m3d_agents.labels import get_taxonomy

ABSTAIN = "(abstained)"
FAILED = "(failed)"
NO_ANSWER = (ABSTAIN, FAILED)


class ClassScores(BaseModel):
    precision: float
    recall: float
    f1: float
    support: int


class ClassificationScores(BaseModel):
    labels: list[str]
    accuracy: float
    macro_f1: float
    weighted_f1: float
    weighted_precision: float = 0.0
    weighted_recall: float = 0.0
    per_class: dict[str, ClassScores]
    confusion: list[list[int]]
    confusion_columns: list[str]


class FakeClassRow(BaseModel):
    """Accuracy with the misinformation (fake) class's precision, recall and F1: the layout of FactGuard's Table 1."""

    accuracy: float
    precision: float
    recall: float
    f1: float


class ToolStatistics(BaseModel):
    """How strategies that call tools (FactGuard) used them, from each verdict's diagnostics."""

    samples: int
    share_using_tools: float
    mean_calls: dict[str, float]
    refusals: dict[str, int]
    mean_turns: float
    tokens_per_sample: float
    latency_per_sample_s: float


DIFFICULTY_BINS: tuple[tuple[int, int | None], ...] = ((0, 3), (4, 6), (7, 8), (9, None))
"""Gold-evidence counts per bin (inclusive; None: no upper end). AgentFact's App. D (paper lines 531-539)
names 4-6 as the hardest and 9+ as the easiest; its figure's other edges are not in the text, so
0-3 and 7-8 are our reading."""


class DifficultyBin(BaseModel):
    """The rows whose human fact-check cites ``low``..``high`` evidence items, scored as App. D scores them."""

    bin: str
    samples: int
    accuracy: float
    macro_f1: float
    true_vs_not_true_macro_f1: float | None = None


def escalation(rows: Sequence[EvalRow]) -> Escalation | None:
    """The planner's escalation over the finished rows that report one; None when no row had a planner."""
    diagnostics = [r.diagnostics() for r in rows if r.status != "error"]
    planned = [int(d.planner_escalated) for d in diagnostics
               if isinstance(d, DebateDiagnostics) and d.planner_escalated is not None]
    if not planned:
        return None
    return Escalation(planned=len(planned), escalated=sum(planned), share=sum(planned) / len(planned))


class RunMetrics(BaseModel):
    samples: int
    scored: int
    errors: int
    abstained: int
    abstention_rate: float
    coverage: float
    selective_accuracy: float | None
    classification: ClassificationScores | None
    binary: ClassificationScores | None
    ece: float | None
    latency_p50_s: float | None = Field(description="wall time per sample, over the finished samples that called a model")
    latency_p95_s: float | None
    latency_rows: int = Field(0, description="the samples the latency is over: finished, not wholly from the cache")
    cached_rows: int = Field(0, description="finished samples whose every model call the response cache answered")
    model_s_per_sample: float | None = Field(
        None, description="the backends' time answering a sample's calls, summed over them, mean over latency_rows")
    wait_s_per_sample: float | None = Field(
        None, description="the time a sample's calls waited for a backend slot, summed over them, mean over the "
        "latency_rows that measured it (None: none did; rows written before it was measured)")
    calls_per_sample: float
    cut_answers: int = Field(0, description="answers cut at their token cap (finish_reason length), over every sample")
    model_calls: int = Field(0, description="model calls over every sample, the cut answers' denominator")
    prompt_tokens_per_sample: float
    completion_tokens_per_sample: float
    cost_usd: float | None
    cost_per_sample_usd: float | None
    error_types: dict[str, int]
    fake_class: FakeClassRow | None = None
    tools: ToolStatistics | None = None
    true_vs_not_true: ClassificationScores | None = None
    citation_validity: float | None = None
    cited_ids: int = 0
    leakage: dict[str, int] = Field(default_factory=dict)
    looked_at: int = Field(0, description="evidence items retrieval looked at (kept and dropped), over the rows")
    leakage_share: dict[str, float] = Field(default_factory=dict, description="per leakage rule: its drops over looked_at")
    undated_kept_share: float | None = Field(None, description="kept pages with no publication date, over the kept pages")
    difficulty: list[DifficultyBin] = Field(default_factory=list, description="App. D: scores by gold-evidence count")
    escalation: Escalation | None = Field(None, description="the planner's escalation to best-of-N, for runs with a planner")


def fake_class_row(binary: ClassificationScores | None) -> FakeClassRow | None:
    if binary is None or "misinformation" not in binary.per_class:
        return None
    fake = binary.per_class["misinformation"]
    return FakeClassRow(accuracy=binary.accuracy, precision=fake.precision, recall=fake.recall, f1=fake.f1)


def tool_statistics(rows: Sequence[EvalRow]) -> ToolStatistics | None:
    """Tool use over the finished rows whose verdict reports tool calls; None when no row does."""
    used: list[EvalRow] = []
    diagnostics: list[FactGuardDiagnostics] = []
    for row in rows:
        d = row.diagnostics() if row.status != "error" else None
        if isinstance(d, FactGuardDiagnostics):
            used.append(row)
            diagnostics.append(d)
    if not used:
        return None
    names = sorted({name for d in diagnostics for name in d.tool_calls})
    refusals: dict[str, int] = {}
    for d in diagnostics:
        for name, count in d.tool_refusals.items():
            refusals[name] = refusals.get(name, 0) + count
    return ToolStatistics(
        samples=len(used),
        share_using_tools=float(np.mean([d.used_tools for d in diagnostics])),
        mean_calls={name: float(np.mean([d.tool_calls.get(name, 0) for d in diagnostics])) for name in names},
        refusals=refusals,
        mean_turns=float(np.mean([d.turns for d in diagnostics])),
        tokens_per_sample=float(np.mean([r.prompt_tokens + r.completion_tokens for r in used])),
        latency_per_sample_s=float(np.mean([r.latency_s for r in used])),
    )


def per_class_scores(gold: Sequence[str], pred: Sequence[str], labels: Sequence[str]) -> dict[str, ClassScores]:
    """Precision, recall and F1 of each label; 0 where a ratio is undefined (as sklearn's zero_division=0)."""
    g, p = np.asarray(gold, dtype=object), np.asarray(pred, dtype=object)
    scores = {}
    for label in labels:
        tp = int(np.sum((g == label) & (p == label)))
        fp = int(np.sum((g != label) & (p == label)))
        fn = int(np.sum((g == label) & (p != label)))
        precision = tp / (tp + fp) if tp + fp else 0.0
        recall = tp / (tp + fn) if tp + fn else 0.0
        f1 = 2 * tp / (2 * tp + fp + fn) if tp + fp + fn else 0.0
        scores[label] = ClassScores(precision=precision, recall=recall, f1=f1, support=tp + fn)
    return scores


def confusion_matrix(gold: Sequence[str], pred: Sequence[str], rows: Sequence[str], columns: Sequence[str]) -> list[list[int]]:
    index = {label: i for i, label in enumerate(columns)}
    matrix = np.zeros((len(rows), len(columns)), dtype=int)
    row_index = {label: i for i, label in enumerate(rows)}
    for g, p in zip(gold, pred):
        matrix[row_index[g], index[p]] += 1
    return matrix.tolist()


def classification_scores(gold: Sequence[str], pred: Sequence[str], label_order: Sequence[str]) -> ClassificationScores:
    present = set(gold) | set(pred)
    labels = [label for label in label_order if label in present and label not in NO_ANSWER]
    per_class = per_class_scores(gold, pred, labels)
    supports = np.array([per_class[label].support for label in labels], dtype=float)
    f1s = np.array([per_class[label].f1 for label in labels], dtype=float)
    precisions = np.array([per_class[label].precision for label in labels], dtype=float)
    recalls = np.array([per_class[label].recall for label in labels], dtype=float)

    def weighted(values: np.ndarray) -> float:
        return float((values * supports).sum() / supports.sum()) if supports.sum() else 0.0

    columns = list(labels) + [column for column in NO_ANSWER if column in present]
    rows = [label for label in label_order if label in set(gold)]
    return ClassificationScores(
        labels=labels,
        accuracy=float(np.mean(np.asarray(gold, dtype=object) == np.asarray(pred, dtype=object))) if gold else 0.0,
        macro_f1=float(f1s.mean()) if labels else 0.0,
        weighted_f1=weighted(f1s),
        weighted_precision=weighted(precisions),
        weighted_recall=weighted(recalls),
        per_class=per_class,
        confusion=confusion_matrix(gold, pred, rows, columns),
        confusion_columns=columns,
    )


def expected_calibration_error(confidence: Sequence[float], correct: Sequence[bool], bins: int = 10) -> float:
    conf = np.asarray(confidence, dtype=float)
    hit = np.asarray(correct, dtype=float)
    if conf.size == 0:
        return 0.0
    edges = np.linspace(0.0, 1.0, bins + 1)
    which = np.searchsorted(edges[1:-1], conf, side="left")
    ece = 0.0
    for b in range(bins):
        mask = which == b
        if mask.any():
            ece += mask.mean() * abs(hit[mask].mean() - conf[mask].mean())
    return float(ece)


def percentile(values: Sequence[float], q: float) -> float | None:
    return float(np.percentile(np.asarray(values, dtype=float), q)) if len(values) else None


def mean_of(values: Sequence[float | None]) -> float | None:
    """The mean of the values that were measured; None when none was."""
    known = [v for v in values if v is not None]
    return float(np.mean(known)) if known else None


def binary_name(value: bool | None) -> str:
    if value is None:
        return ABSTAIN
    return "misinformation" if value else "not_misinformation"


def predicted(row: EvalRow, label: str | None) -> str:
    """What a row predicted for the confusion matrix: its label, or which kind of no answer."""
    if row.status == "error":
        return FAILED
    return label if row.status == "ok" and label else ABSTAIN


def true_or_not(label: str | None, true_label: str) -> str | None:
    if label is None:
        return None
    return "true" if label == true_label else "not_true"


def citation_counts(rows: Sequence[EvalRow]) -> tuple[int, int]:
    """(valid cited ids, all cited ids) over every answer of the rows' explainers, retries included."""
    valid = cited = 0
    for row in rows:
        explanation = (row.verdict or {}).get("explanation") or {}
        if explanation.get("cited_all_answers") is not None:
            every = int(explanation["cited_all_answers"])
            valid += every - int(explanation.get("unknown_all_answers") or 0)
            cited += every
            continue
        kept = sum(len(point.get("evidence_ids") or []) for point in explanation.get("key_points") or [])
        valid += kept
        cited += kept + int(explanation.get("dropped_citations") or 0)
    return valid, cited


def evidence_shares(rows: Sequence[EvalRow], rules: Sequence[str]) -> tuple[int, dict[str, float], float | None]:
    """(items looked at, each leakage rule's share of them, the undated share of the kept pages), from the evidence reports."""
    looked = pages = undated = 0
    dropped: dict[str, int] = {}
    for row in rows:
        report = (row.verdict or {}).get("evidence_report") or {}
        looked += int(report.get("kept") or 0) + int(report.get("dropped") or 0)
        pages += int(report.get("pages_kept") or 0)
        undated += int(report.get("undated_pages_kept") or 0)
        for why, count in (report.get("dropped_why") or {}).items():
            if why in rules:
                dropped[why] = dropped.get(why, 0) + int(count)
    shares = {rule: dropped.get(rule, 0) / looked for rule in rules} if looked else {}
    return looked, shares, undated / pages if pages else None


def difficulty_bins(rows: Sequence[EvalRow], label_order: Sequence[str], true_label: str | None) -> list[DifficultyBin]:
    """App. D: the scored rows that know their gold-evidence count, per :data:`DIFFICULTY_BINS`; empty when none does."""
    counted = [r for r in rows if r.scored and r.gold_evidence is not None]
    out = []
    for low, high in DIFFICULTY_BINS:
        chosen = [r for r in counted if low <= int(r.gold_evidence or 0) and (high is None or int(r.gold_evidence or 0) <= high)]
        if not chosen:
            continue
        scores = classification_scores([str(r.gold) for r in chosen], [predicted(r, r.label) for r in chosen], label_order)
        two = None
        if true_label is not None:
            two = classification_scores([str(true_or_not(r.gold, true_label)) for r in chosen],
                                        [predicted(r, true_or_not(r.label, true_label)) for r in chosen],
                                        ["true", "not_true", *NO_ANSWER]).macro_f1
        out.append(DifficultyBin(bin=f"{low}-{high}" if high is not None else f"{low}+", samples=len(chosen),
                                 accuracy=scores.accuracy, macro_f1=scores.macro_f1, true_vs_not_true_macro_f1=two))
    return out


def leakage_counts(rows: Sequence[EvalRow]) -> dict[str, int]:
    totals: dict[str, int] = {}
    for row in rows:
        d = row.diagnostics()
        if isinstance(d, AgentFactDiagnostics):
            for rule, count in d.leakage.items():
                totals[rule] = totals.get(rule, 0) + count
    return totals


def compute_metrics(rows: Sequence[EvalRow], taxonomy: str) -> RunMetrics:
    from retrieval.leakage import RULES  # with the source ratings' model client: not for m3d reproduce --list

    label_order = get_taxonomy(taxonomy).labels + list(NO_ANSWER)
    finished = [r for r in rows if r.status != "error"]
    timed = [r for r in finished if not r.from_cache]
    scored = [r for r in rows if r.scored]
    gold = [str(r.gold) for r in scored]
    pred = [predicted(r, r.label) for r in scored]
    classification = classification_scores(gold, pred, label_order) if scored else None
    binary = None
    if scored:
        binary = classification_scores(
            [binary_name(r.gold_misinformation) for r in scored],
            [predicted(r, binary_name(r.is_misinformation)) for r in scored],
            ["misinformation", "not_misinformation", *NO_ANSWER],
        )
    true_label = get_taxonomy(taxonomy).true_label
    true_view = None
    if scored and true_label is not None:
        true_view = classification_scores(
            [str(true_or_not(r.gold, true_label)) for r in scored],
            [predicted(r, true_or_not(r.label, true_label)) for r in scored],
            ["true", "not_true", *NO_ANSWER],
        )
    valid_cited, all_cited = citation_counts(finished)
    looked_at, leakage_share, undated_share = evidence_shares(finished, RULES)
    answered = [r for r in scored if r.status == "ok"]
    calibrated = [r for r in answered if r.confidence is not None]
    abstained = sum(1 for r in finished if r.status == "abstained")
    costs = [r.cost_usd for r in finished]
    known_cost = None if any(c is None for c in costs) else float(sum(c for c in costs if c is not None))
    n = len(finished)
    error_types: dict[str, int] = {}
    for r in rows:
        if r.error is not None:
            error_types[r.error.type] = error_types.get(r.error.type, 0) + 1
    return RunMetrics(
        samples=len(rows),
        scored=len(scored),
        errors=len(rows) - n,
        abstained=abstained,
        abstention_rate=abstained / n if n else 0.0,
        coverage=sum(1 for r in rows if r.status == "ok") / len(rows) if rows else 0.0,
        selective_accuracy=float(np.mean([r.correct for r in answered])) if answered else None,
        classification=classification,
        binary=binary,
        ece=expected_calibration_error([r.confidence for r in calibrated], [r.correct for r in calibrated])  # type: ignore[misc]
        if calibrated else None,
        latency_p50_s=percentile([r.latency_s for r in timed], 50),
        latency_p95_s=percentile([r.latency_s for r in timed], 95),
        latency_rows=len(timed),
        cached_rows=len(finished) - len(timed),
        model_s_per_sample=mean_of([r.model_s for r in timed]),
        wait_s_per_sample=mean_of([r.wait_s for r in timed]),
        calls_per_sample=float(np.mean([r.model_calls for r in finished])) if n else 0.0,
        cut_answers=sum(r.cut_answers for r in finished),
        model_calls=sum(r.model_calls for r in finished),
        prompt_tokens_per_sample=float(np.mean([r.prompt_tokens for r in finished])) if n else 0.0,
        completion_tokens_per_sample=float(np.mean([r.completion_tokens for r in finished])) if n else 0.0,
        cost_usd=known_cost,
        cost_per_sample_usd=known_cost / n if known_cost is not None and n else None,
        error_types=error_types,
        fake_class=fake_class_row(binary),
        tools=tool_statistics(rows),
        true_vs_not_true=true_view,
        citation_validity=valid_cited / all_cited if all_cited else None,
        cited_ids=all_cited,
        leakage=leakage_counts(finished),
        looked_at=looked_at,
        leakage_share=leakage_share,
        undated_kept_share=undated_share,
        difficulty=difficulty_bins(rows, label_order, true_label),
        escalation=escalation(rows),
    )

