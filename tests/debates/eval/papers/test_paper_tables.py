"""The registry of the papers' tables, the figures of a reproduced row, and the header that says what differs."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from debates.eval.score.metrics import compute_metrics
from debates.eval.papers.paper_tables import PaperTable, all_tables, check_runnable, load_table, table_names
from debates.eval.records import EvalRow
from debates.eval.papers.reproduce import describe_setting, header_lines, model_key, same_model
from debates.eval.papers.table_figures import METRICS, row_figures
from debates.config_loader import available_configs, load_config
from m3d_agents.errors import InputError
from m3d_agents.labels import get_taxonomy
from tests.support.diagnostics import t2agent_diagnostics
from tests.support.paths import REPO

REQUIRED = {"agentm3d-table1", "t2agent-table1", "t2agent-table3", "llm-consensus-table1", "agentfact-table3",
            "factguard-table1"}


def test_every_table_loads_and_the_five_papers_are_there() -> None:
    tables = all_tables()
    assert REQUIRED <= set(table_names())
    assert {t.paper for t in tables} == {"AgentM3D", "T2Agent", "LLM-Consensus", "AgentFact", "FactGuard"}
    for table in tables:
        assert table.citation.table and (table.citation.page is not None or table.citation.page_note)
        assert table.configs(), f"{table.id} runs no configuration"
        for row in table.rows:
            for kind in table.datasets:
                if any(v is None for v in table.figures(row, kind).values()):
                    assert table.missing_of(row) is not None, f"{table.id}/{row.id} lacks a number and says not why"


def test_agentm3d_table1_holds_all_96_numbers_of_both_backbones_and_both_data_sets() -> None:
    table = load_table("agentm3d-table1")
    assert table.missing is None and set(table.datasets) == {"mmfakebench", "combined"}
    numbers = [v for row in table.rows for kind in table.datasets for v in table.figures(row, kind).values()]
    assert len(numbers) == 96 and None not in numbers
    assert [(r.config, r.backbone) for r in table.rows[:6]] == [
        ("standard", "Qwen3-VL-4B"), ("bon", "Qwen3-VL-4B"), ("t2agent", "Qwen3-VL-4B"), ("mmd-agent", "Qwen3-VL-4B"),
        ("mmd-agent-bon", "Qwen3-VL-4B"), ("agentm3d", "Qwen3-VL-4B")]
    ours = next(r for r in table.rows if r.id == "agentm3d-8b")
    assert table.figures(ours, "combined") == {"accuracy": 48.1, "macro_f1": 48.3, "macro_recall": 50.5, "macro_precision": 52.4}
    assert table.datasets["mmfakebench"].samples == 1000 and table.datasets["combined"].samples == 900


def test_a_data_set_without_a_loader_is_listed_and_refused_with_the_reason() -> None:
    table = load_table("agentm3d-table1")
    assert table.without_loader() == ["combined"]
    with pytest.raises(InputError, match="combined data set has no loader in this build.*Fakeddit"):
        check_runnable(table, available_configs(), "combined")
    check_runnable(table, available_configs(), "mmfakebench")


def test_llm_consensus_tables_hold_the_papers_rows_and_no_sync_row() -> None:
    table = load_table("llm-consensus-table1")
    assert [r.config for r in table.rows] == ["async-ai", "async-closed", "async", "actor-skeptic", "judged", "disambiguation"]
    assert table.metrics == ["accuracy", "fake_precision", "fake_recall"] and table.backbone == "LLaVA"
    numbers = [v for row in table.rows for v in table.figures(row, "newsclippings").values()]
    assert len(numbers) == 18 and None not in numbers
    closed = next(r for r in table.rows if r.id == "async-closed")
    assert table.figures(closed, "newsclippings") == {"accuracy": 77.1, "fake_precision": 68.4, "fake_recall": 89.3}
    assert load_config("async-closed").use_evidence is False  # type: ignore[attr-defined]
    second = load_table("llm-consensus-table2")
    assert len([r for r in second.rows if table.figures(r, "newsclippings")["accuracy"] is not None]) == 16
    assert next(r for r in second.rows if r.config == "async").numbers == {"newsclippings": {"accuracy": 90.8}}
    ablation = load_table("llm-consensus-table3")
    given = {r.id: ablation.figures(r, "newsclippings") for r in ablation.rows if r.numbers}
    assert given == {"gpt-4o-debate": {"accuracy": 90.2, "fake_precision": 90.3, "fake_recall": 90.1},
                     "gpt-4o-retrieval-debate": {"accuracy": 90.8, "fake_precision": 85.5, "fake_recall": 99.0}}
    study = load_table("llm-consensus-table4")
    assert study.datasets["newsclippings"].samples == 10
    assert [ablation.figures(r, "newsclippings")["accuracy"] for r in study.rows] == [None, None, 80.0]


def test_the_transcribed_rows_hold_the_papers_numbers() -> None:
    t1 = load_table("t2agent-table1")
    gpt4o = next(r for r in t1.rows if r.id == "t2agent-gpt4o")
    assert (gpt4o.config, gpt4o.backbone, t1.figures(gpt4o, "mmfakebench")) == (
        "t2agent", "GPT-4o", {"macro_f1": 0.759, "accuracy": 0.753})
    ablation = load_table("t2agent-table3")
    assert [(r.config, ablation.figures(r, "mmfakebench")["macro_f1"]) for r in ablation.rows] == [
        ("mmd-agent-wikipedia", 0.398), ("mmd-agent-tools", 0.413), ("t2agent-base-tools", 0.535), ("t2agent", 0.568)]
    agentfact = load_table("agentfact-table3")
    row = next(r for r in agentfact.rows if r.config == "agentfact")
    assert agentfact.figures(row, "rwpost") == {"weighted_f1": 65.5, "accuracy": 57.8, "weighted_recall": 57.8,
                                                 "weighted_precision": 79.1}
    closed = next(r for r in agentfact.rows if r.config == "agentfact-closed")
    assert closed.missing is not None and closed.missing.reason == "not_reported"
    factguard = load_table("factguard-table1")
    mine = next(r for r in factguard.rows if r.config == "factguard")
    assert factguard.figures(mine, "fakevv") == {"accuracy": 83.0, "fake_precision": 85.8, "fake_recall": 82.1, "fake_f1": 83.9}
    assert set(factguard.datasets) == {"fakesv", "fakett", "fakevv"}


def test_the_t2agent_tables_hold_tables_2_4_and_5_apart_and_cite_the_papers_text() -> None:
    amg = load_table("t2agent-table2")
    assert [r.label for r in amg.rows] == ["MMD-Agent"] * 3 + ["T2Agent"] * 3, "the trained detectors are Table 5's"
    assert [r.config for r in amg.rows] == ["mmd-agent-amg"] * 3 + ["t2agent-amg"] * 3
    assert any("mmd-agent-amg, our reading" in note and "amg-chain-ours" in note for note in amg.notes)
    table5 = load_table("t2agent-table5")
    assert table5.citation.table == "Table 5"
    assert [(r.id, table5.figures(r, "amg")["macro_f1"], table5.figures(r, "amg")["accuracy"]) for r in table5.rows] == [
        ("cafe", 0.467, 0.638), ("mcan", 0.461, 0.612), ("mgca", 0.567, 0.739),
        ("t2agent-nano", 0.402, 0.503), ("t2agent-mini", 0.499, 0.538), ("t2agent-gpt4o", 0.510, 0.579)]
    cost = load_table("t2agent-table4")
    assert cost.metrics == ["usd_per_1000_posts"]
    figures = {r.id: cost.figures(r, "mmfakebench")["usd_per_1000_posts"] for r in cost.rows}
    assert figures == {"mmd-agent-gpt4o": 344.4, "t2agent-gpt4o": 1637.1, "mmd-agent-mini": 14.3, "t2agent-mini": 129.4,
                       "mmd-agent-nano": 9.5, "t2agent-nano": 76.2}
    assert round(figures["t2agent-gpt4o"] / figures["mmd-agent-gpt4o"], 2) == 4.75
    for table in (load_table(name) for name in table_names() if name.startswith("t2agent-")):
        assert table.paper_title.startswith("T2Agent: A Tool-augmented Multimodal Misinformation Detection Agent")
        assert "AAAI" not in table.paper_title and "shared/papers/t2agent.txt lines" in table.citation.source


def test_a_table_names_every_configuration_it_needs_and_says_which_are_missing() -> None:
    table = load_table("agentfact-table3")
    with pytest.raises(InputError, match="needs configurations agentfact-closed, agentfact-bounded .*which this build lacks"):
        check_runnable(table, ["agentfact", "standard"])
    check_runnable(load_table("t2agent-table1"), available_configs())


def test_a_bad_table_is_refused_with_the_row_and_the_problem() -> None:
    base: dict[str, Any] = {
        "id": "x", "paper": "P", "paper_title": "P", "title": "t", "taxonomy": "m3d", "scale": "fraction",
        "citation": {"table": "Table 1", "page": 3, "source": "the paper"}, "metrics": ["accuracy"],
        "datasets": {"mmfakebench": {"samples": 10}},
        "rows": [{"id": "a", "label": "A", "config": "standard", "numbers": {"mmfakebench": {"accuracy": 0.5}}}],
    }
    PaperTable.model_validate(base)
    for change, message in [
        ({"rows": [{"id": "a", "label": "A", "config": "standard"}]}, "lacks numbers; say why"),
        ({"metrics": ["accuracy", "magic"]}, "unknown metrics"),
        ({"citation": {"table": "Table 1", "source": "s"}}, "give the table's page"),
        ({"rows": [{"id": "a", "label": "A", "config": None, "numbers": {"amg": {"accuracy": 0.5}}}]}, "not one of the table's data sets"),
        ({"rows": [base["rows"][0], base["rows"][0]]}, "row ids repeat"),
    ]:
        with pytest.raises(ValueError, match=message):
            PaperTable.model_validate({**base, **change})
    with pytest.raises(InputError, match="unknown table 'nope'; known: .*t2agent-table1"):
        load_table("nope")


def row(i: int, gold: str, label: str | None, status: str = "ok", taxonomy: str = "m3d", iterations: int | None = None) -> EvalRow:
    tax = get_taxonomy(taxonomy)
    verdict = {"diagnostics": t2agent_diagnostics(iterations).model_dump(mode="json") if iterations is not None else None}
    return EvalRow(sample_id=f"s{i:02d}", index=i, seed=i, status=status, taxonomy=taxonomy, gold=gold,  # type: ignore[arg-type]
                   label=label if status == "ok" else None, gold_misinformation=tax.is_misinformation(gold),
                   is_misinformation=tax.is_misinformation(label) if label and status == "ok" else None,
                   config="c", backend="b", verdict=verdict if status != "error" else None,
                   error={"type": "BackendError", "message": "down"} if status == "error" else None)


M3D = get_taxonomy("m3d").labels
GOLD = [M3D[i % 4] for i in range(24)]
PRED = [M3D[(i * 7 + i // 5) % 4] for i in range(24)]


def sample_rows() -> list[EvalRow]:
    rows = [row(i, g, p) for i, (g, p) in enumerate(zip(GOLD, PRED))]
    rows[3] = row(3, GOLD[3], None, status="abstained")
    rows[8] = row(8, GOLD[8], None, status="error")
    return rows


def test_a_rows_figures_are_the_runs_own_metrics_with_an_interval_around_them() -> None:
    rows = sample_rows()
    metrics = ["accuracy", "macro_f1", "weighted_f1", "macro_precision", "weighted_recall", "fake_precision",
               "fake_recall", "fake_f1", "binary_accuracy"]
    got = row_figures({"run": rows}, metrics, resamples=500, seed=1)["run"].figures
    expected = compute_metrics(rows, "m3d")
    assert expected.classification is not None and expected.binary is not None and expected.fake_class is not None
    assert got["accuracy"].value == pytest.approx(expected.classification.accuracy)
    assert got["macro_f1"].value == pytest.approx(expected.classification.macro_f1)
    assert got["weighted_f1"].value == pytest.approx(expected.classification.weighted_f1)
    assert got["weighted_recall"].value == pytest.approx(expected.classification.accuracy), "weighted recall is accuracy"
    assert got["binary_accuracy"].value == pytest.approx(expected.binary.accuracy)
    assert (got["fake_precision"].value, got["fake_recall"].value, got["fake_f1"].value) == pytest.approx(
        (expected.fake_class.precision, expected.fake_class.recall, expected.fake_class.f1))
    precisions = [expected.classification.per_class[label].precision for label in expected.classification.labels]
    assert got["macro_precision"].value == pytest.approx(float(np.mean(precisions)))
    for name, figure in got.items():
        assert figure.low is not None and figure.high is not None and figure.value is not None
        assert figure.low <= figure.value + 1e-9 <= figure.high + 2e-9, name
        assert figure.low < figure.high, f"{name}: 24 mixed samples give a spread"
    again = row_figures({"run": rows}, metrics, resamples=500, seed=1)["run"].figures
    assert again == got, "the bootstrap is seeded"


def test_rows_on_the_same_samples_share_their_resamples_and_a_cut_off_row_does_not() -> None:
    rows = sample_rows()
    same = [r.model_copy() for r in rows]
    cut = rows[:10]
    figures = row_figures({"a": rows, "b": same, "c": cut}, ["accuracy"], resamples=300, seed=0)
    assert figures["a"].paired and figures["b"].paired and not figures["c"].paired
    assert figures["a"].figures == figures["b"].figures
    assert figures["c"].figures["accuracy"].samples == 10


def test_a_diagnostic_metric_averages_over_the_samples_that_report_it() -> None:
    rows = [row(i, "original", "original", iterations=k) for i, k in enumerate([1, 2, 3, 2])]
    rows.append(row(9, "original", None, status="error"))
    figure = row_figures({"r": rows}, ["mean_iterations"], resamples=200)["r"].figures["mean_iterations"]
    assert figure.value == pytest.approx(2.0)
    assert METRICS["mean_iterations"].view == "diagnostic"


def test_model_names_match_the_papers_backbones_only_when_they_are_that_model() -> None:
    assert model_key("Qwen/Qwen3-VL-8B-Instruct") == model_key("Qwen3-VL-8B")
    assert same_model("gpt-4o-2024-08-06", "GPT-4o") is True
    assert same_model("gpt-4o-mini", "GPT-4o") is False
    assert same_model("gpt-4.1-nano", "GPT-4.1-nano") is True
    assert same_model("gpt-4o", None) is None


def fake_loaded(n: int) -> Any:
    return SimpleNamespace(samples=list(range(n)))


def test_the_header_calls_a_run_the_papers_setting_only_when_model_and_size_are_the_papers(tmp_path: Path) -> None:
    table = PaperTable.model_validate({
        "id": "x", "paper": "P", "paper_title": "Paper", "title": "T", "taxonomy": "m3d", "scale": "fraction",
        "citation": {"table": "Table 2", "page": 5, "source": "the paper"}, "metrics": ["accuracy"],
        "datasets": {"mmfakebench": {"split": "val", "samples": 4}}, "backbone": "GPT-4o",
        "rows": [{"id": "a", "label": "A", "config": "standard", "backbone": "GPT-4o", "numbers": {"mmfakebench": {"accuracy": 0.5}}}],
    })
    spec = f"mmfakebench:{tmp_path / 'val.json'}"
    same = describe_setting(table, "mmfakebench", spec, fake_loaded(4), 4, None, "openai", "gpt-4o")
    assert same.papers_setting and not same.differences
    lines = header_lines(table, same, 2000, 0, True, ["off for every row"])
    assert any(line.startswith("setting: the paper's backbone and sample count (4)") for line in lines)
    assert "Table 2, p. 5" in lines[1]

    subset = describe_setting(table, "mmfakebench", spec, fake_loaded(4), 2, 2, "openai", "gpt-4o")
    assert not subset.papers_setting
    assert subset.differences == ["a subset: the first 2 of the data set's 4 samples (--limit 2)",
                                  "2 samples, where the paper scored 4"]
    assert "setting: NOT the paper's setting: a subset" in "\n".join(header_lines(table, subset, 2000, 0, True, []))

    other = describe_setting(table, "mmfakebench", spec, fake_loaded(4), 4, None, "vllm", "Qwen/Qwen3-VL-8B-Instruct")
    assert other.differences == ["backend vllm runs Qwen/Qwen3-VL-8B-Instruct; the paper ran GPT-4o"]

    fixture = REPO / "tests" / "fixtures" / "datasets" / "MMFakeBench_val" / "source" / "MMFakeBench_val.json"
    small = describe_setting(table, "mmfakebench", f"mmfakebench:{fixture}", fake_loaded(4), 4, None, "openai", "gpt-4o",
                             without_evidence=["standard"])
    assert small.differences == ["a test fixture in the data set's format, not the data set",
                                 "retrieval off for standard (the paper's setting gathers evidence for it)"]

    unknown = table.model_copy(update={"datasets": {"mmfakebench": table.datasets["mmfakebench"].model_copy(update={"samples": None})}})
    assert not describe_setting(unknown, "mmfakebench", spec, fake_loaded(4), 4, None, "openai", "gpt-4o").papers_setting


def test_a_table_with_several_backbones_marks_the_rows_run_on_ours(tmp_path: Path) -> None:
    table = load_table("t2agent-table1")
    spec = f"mmfakebench:{tmp_path / 'val.json'}"
    setting = describe_setting(table, "mmfakebench", spec, fake_loaded(1000), 1000, None, "openai", "gpt-4o")
    assert setting.differences == ["backend openai runs gpt-4o, the paper's backbone for the rows marked yes only; "
                                   "the others ran on BLIP-2, GPT-4.1-nano, GPT-4o-mini, LLaVA-1.6"]
    agentm3d = describe_setting(load_table("agentm3d-table1"), "mmfakebench", spec, fake_loaded(1000), 1000, None, "vllm",
                                "Qwen/Qwen3-VL-8B-Instruct")
    assert agentm3d.differences == ["backend vllm runs Qwen/Qwen3-VL-8B-Instruct, the paper's backbone for the rows marked "
                                    "yes only; the others ran on Qwen3-VL-4B"]


def test_agentfacts_table_three_gives_the_papers_sample_counts_and_its_other_fact_check_blocks() -> None:
    table = load_table("agentfact-table3")
    assert table.datasets["rwpost"].samples == 1436 and table.datasets["mocheg"].samples == 1000
    assert table.datasets["claimreview2024"].samples is None and "gated" in table.datasets["claimreview2024"].note
    row = next(r for r in table.rows if r.config == "agentfact")
    assert table.figures(row, "claimreview2024") == {"weighted_f1": 69.2, "accuracy": 67.0, "weighted_recall": 67.0,
                                                      "weighted_precision": 74.6}
    assert table.figures(row, "mocheg") == {"weighted_f1": 51.9, "accuracy": 48.2, "weighted_recall": 48.2,
                                            "weighted_precision": 49.6}


def test_the_evaluations_not_built_say_so_in_their_tables_and_pages() -> None:
    """AgentFact's human study and Table IV; FactGuard's GPT-4o reasoning audit and its twelve other baselines."""
    agentfact = [n for n in load_table("agentfact-table3").notes if n.startswith("Not built:")]
    assert len(agentfact) == 1 and "human evaluation" in agentfact[0] and "Table IV" in agentfact[0]
    factguard = [n for n in load_table("factguard-table1").notes if n.startswith("Not built:")]
    assert len(factguard) == 1 and "twelve other baselines" in factguard[0] and "GPT-4o audit" in factguard[0]
    baselines = factguard[0].split("(")[1].split(";")[0].split(", ")
    assert len(baselines) == 12
    from tests.support.paths import REPO

    for page, words in (("agentfact.md", "Table IV"), ("factguard.md", "GPT-4o audit")):
        text = (REPO / "docs" / "systems" / page).read_text(encoding="utf-8")
        assert "Not built:" in text and words in text.split("Not built:")[1].split("\n\n")[0]
