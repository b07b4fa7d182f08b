"""``m3d reproduce`` end to end against a scripted loopback model: a paper's table runs, prints the paper's
numbers beside ours, says what differs from the paper's setting, and resumes after an interruption
with no row lost or repeated."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator

import pytest
from typer.testing import CliRunner

from debates.cli.main import app
from debates.eval.records import read_rows
from tests.support.paths import REPO
from tests.support.reproduce_script import backend_file, scripted_table_server

FIXTURE = REPO / "tests" / "fixtures" / "datasets" / "MMFakeBench_val"
ENTRY = "from debates.cli.main import app; app()"


@pytest.fixture
def scripted(tmp_path: Path) -> Iterator[Path]:
    """A backends file naming the scripted loopback model (backend ``scripted``, model ``scripted-model``)."""
    with scripted_table_server() as server:
        path = tmp_path / "m3d.yaml"
        path.write_text(backend_file(server.base_url))
        yield path


def arguments(table: str, dataset: str, out: Path, settings: Path, *more: str) -> list[str]:
    return ["reproduce", table, "--dataset", dataset, "--backend", "scripted", "--config-file", str(settings),
            "--out", str(out), "--retrieval", "off", "--no-progress", "--resamples", "500", *more]


def test_the_list_shows_each_papers_tables() -> None:
    result = CliRunner().invoke(app, ["reproduce", "--list"])
    assert result.exit_code == 0, result.output
    for line in ("agentm3d-table1  AgentM3D Table 1 on mmfakebench", "t2agent-table1  T2Agent Table 1 on mmfakebench",
                 "t2agent-table3  T2Agent Table 3", "llm-consensus-table1  LLM-Consensus Table 1 on newsclippings",
                 "agentfact-table3  AgentFact Table III on rwpost", "factguard-table1  FactGuard Table 1 on fakesv, fakett, fakevv",
                 "t2agent-table4  T2Agent Table 4 on mmfakebench", "t2agent-table5  T2Agent Table 5 on amg"):
        assert line in result.output, line


def test_a_table_runs_end_to_end_and_prints_the_papers_numbers_beside_ours(tmp_path: Path, scripted: Path) -> None:
    out = tmp_path / "t2agent"
    dataset = f"mmfakebench:{FIXTURE / 'source' / 'MMFakeBench_val.json'}"
    result = CliRunner().invoke(app, arguments("t2agent-table1", dataset, out, scripted), env={"COLUMNS": "320"})
    assert result.exit_code == 0, result.output
    text = result.output
    assert "setting: NOT the paper's setting: a test fixture in the data set's format, not the data set; " \
           "3 samples, where the paper scored 1000; backend scripted runs scripted-model; the paper ran" in text
    assert "retrieval off for mmd-agent-wikipedia, t2agent (the paper's setting gathers evidence for them)" in text
    for number in ("0.759", "0.753", "0.568", "0.614", "0.716"):
        assert number in text, f"the paper's {number} is printed"
    assert "not run (no configuration)" in text, "LRQ-FACT has no configuration and says so"
    assert "departures from the papers (" in text
    assert "  t2agent: [stand-in-physics-check] physics_check stands in for the paper's tool: LLaVA-34B" in text
    assert "mmd-agent-wikipedia, t2agent: [retrieval-off] retrieval is off" in text
    assert "[samples-without-evidence] 3 of 3 samples (100%) ended with no evidence item (detected)" in text
    run_json = json.loads((out / "t2agent" / "run.json").read_text())
    ids = {d["id"]: d["origin"] for d in run_json["departures"]}
    assert ids["revisit-after-sweep"] == "configuration" and ids["retrieval-off"] == "detected"
    assert ids["samples-without-evidence"] == "detected"
    assert "## Departures from the paper" in (out / "t2agent" / "report.md").read_text()
    assert "[revisit-after-sweep]" in (out / "t2agent" / "report.md").read_text()

    table = json.loads((out / "table.json").read_text())
    assert table["complete"] and not table["setting"]["papers_setting"]
    rows = {r["id"]: r for r in table["rows"]}
    for config in ("standard", "mmd-agent-wikipedia", "t2agent"):
        folder = out / config
        run_rows, _ = read_rows(folder / "results.jsonl")
        assert len(run_rows) == 3 and len({r.sample_id for r in run_rows}) == 3
        report = json.loads((folder / "metrics.json").read_text())["metrics"]
        same = [r for r in rows.values() if r["config"] == config]
        assert same and all(r["status"] == "done" and r["samples"] == 3 for r in same)
        ours = same[0]["ours"]
        assert ours["accuracy"]["value"] == pytest.approx(report["classification"]["accuracy"])
        assert ours["macro_f1"]["value"] == pytest.approx(report["classification"]["macro_f1"])
        assert ours["accuracy"]["low"] <= ours["accuracy"]["value"] <= ours["accuracy"]["high"]
        assert same[0]["calls_per_sample"] == pytest.approx(report["calls_per_sample"]) and report["calls_per_sample"] >= 1
        assert same[0]["no_evidence_share"] == 1.0, "retrieval off: no sample has evidence"
    gpt4o = rows["t2agent-gpt4o"]
    assert gpt4o["paper"] == {"macro_f1": 0.759, "accuracy": 0.753} and gpt4o["same_backbone"] is False
    assert gpt4o["difference"]["accuracy"]["value"] == pytest.approx(gpt4o["ours"]["accuracy"]["value"] - 0.753)
    assert rows["lrq-fact"]["status"] == "no configuration" and rows["lrq-fact"]["ours"] == {}

    markdown = (out / "table.md").read_text()
    assert markdown.startswith("# T2Agent Table 1: MMFakeBench, four classes")
    assert "| T2Agent | GPT-4o (no) | t2agent | macro-F1 |" in markdown and "| 0.759 |" in markdown
    assert (out / "table.png").read_bytes()[:4] == b"\x89PNG"


def test_the_cost_table_sets_our_dollars_per_1000_posts_beside_the_papers(tmp_path: Path, scripted: Path) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text("scripted-model: {input_per_mtok: 2.5, output_per_mtok: 10.0}\n")
    out = tmp_path / "cost"
    dataset = f"mmfakebench:{FIXTURE / 'source' / 'MMFakeBench_val.json'}"
    result = CliRunner().invoke(app, arguments("t2agent-table4", dataset, out, scripted, "--prices", str(prices)),
                                env={"COLUMNS": "240"})
    assert result.exit_code == 0, result.output
    table = json.loads((out / "table.json").read_text())
    rows = {r["id"]: r for r in table["rows"]}
    assert rows["t2agent-gpt4o"]["paper"] == {"usd_per_1000_posts": 1637.1}
    assert rows["mmd-agent-gpt4o"]["paper"] == {"usd_per_1000_posts": 344.4}
    for config in ("t2agent", "mmd-agent-wikipedia"):
        run_rows, _ = read_rows(out / config / "results.jsonl")
        dollars = [r.cost_usd for r in run_rows]
        assert all(d is not None and d > 0 for d in dollars), "a priced backend bills every sample"
        ours = next(r for r in rows.values() if r["config"] == config)["ours"]["usd_per_1000_posts"]
        assert ours["value"] == pytest.approx(1000 * sum(dollars) / len(dollars))  # type: ignore[arg-type]
        assert ours["low"] <= ours["value"] <= ours["high"]
    assert "1637.1" in result.output and "USD / 1000 posts" in result.output


def test_agentm3d_table1_prints_the_papers_numbers_and_each_runs_escalation(tmp_path: Path, scripted: Path) -> None:
    out = tmp_path / "agentm3d"
    dataset = f"mmfakebench:{FIXTURE / 'source' / 'MMFakeBench_val.json'}"
    result = CliRunner().invoke(app, arguments("agentm3d-table1", dataset, out, scripted, "--limit", "2"),
                                env={"COLUMNS": "360"})
    assert result.exit_code == 0, result.output
    assert "a subset: the first 2 of the data set's 3 samples (--limit 2)" in result.output
    assert "the paper ran Qwen3-VL-4B, Qwen3-VL-8B" in result.output
    table = json.loads((out / "table.json").read_text())
    assert [r["config"] for r in table["rows"][:6]] == ["standard", "bon", "t2agent", "mmd-agent", "mmd-agent-bon", "agentm3d"]
    assert all(None not in r["paper"].values() and r["missing"] is None for r in table["rows"])
    rows = {r["id"]: r for r in table["rows"]}
    assert rows["agentm3d-8b"]["paper"] == {"accuracy": 62.0, "macro_f1": 62.6, "macro_recall": 64.2, "macro_precision": 62.1}
    assert rows["agentm3d-8b"]["escalated"] == 100.0 and rows["agentm3d-8b"]["paper_escalated"] == 69.1, \
        "the loopback planner always escalates"
    assert rows["agentm3d-4b"]["escalated"] == 100.0 and rows["agentm3d-4b"]["paper_escalated"] is None
    assert rows["mmd-agent-bon-4b"]["escalated"] is None, "no planner, no escalation figure"
    assert "100.0% (69.1%)" in result.output and "100.0% (not given)" in result.output
    assert "| escalated to best-of-N (paper) |" in (out / "table.md").read_text()
    calls = {r["config"]: r["calls_per_sample"] for r in table["rows"]}
    assert calls["standard"] == 1 and calls["bon"] > calls["standard"] and calls["agentm3d"] > calls["mmd-agent"]
    run = json.loads((out / "agentm3d" / "run.json").read_text())
    assert run["escalation"] == {"planned": 2, "escalated": 2, "share": 1.0}


def test_a_data_set_the_table_has_no_loader_for_is_refused_in_one_line(tmp_path: Path, scripted: Path) -> None:
    result = CliRunner().invoke(app, arguments("agentm3d-table1", f"combined:{tmp_path}", tmp_path / "c", scripted))
    assert result.exit_code != 0
    assert "agentm3d-table1's combined data set has no loader in this build" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "c").exists()


def test_bad_requests_get_one_line_before_any_work(tmp_path: Path, scripted: Path) -> None:
    dataset = f"mmfakebench:{FIXTURE / 'source' / 'MMFakeBench_val.json'}"
    cases = [
        (arguments("t2agent-table1", f"newsclippings:{tmp_path}", tmp_path / "b", scripted),
         "t2agent-table1 reports on mmfakebench, not on newsclippings"),
        (arguments("no-such-table", dataset, tmp_path / "c", scripted), "unknown table 'no-such-table'"),
        (["reproduce", "t2agent-table1", "--dataset", dataset], "give --backend, --out (or --list to see the tables)"),
    ]
    for args, message in cases:
        result = CliRunner().invoke(app, args, env={"COLUMNS": "320"})
        assert result.exit_code == 2, result.output
        assert message in " ".join(result.output.split()) and "Traceback" not in result.output
    assert not any((tmp_path / name).exists() for name in "bc")


def test_workers_run_every_row_on_the_ray_runner(tmp_path: Path, scripted: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--workers, --ray-address and --max-worker-deaths reach each row's runner the way m3d evaluate hands them over;
    the Ray runner itself is tested in test_ray_runner.py (here it runs in this process)."""
    import debates.eval.run.ray_runner as ray_runner
    from debates.eval.run.batch import BatchRunner

    seen: list[tuple[str, int | None, str | None, int, str]] = []

    class InProcess(BatchRunner):
        def __init__(self, *args: Any, workers: int | None = None, address: str | None = None, max_worker_deaths: int = 3,
                     **options: Any) -> None:
            recipe = args[2].spec()  # what each worker opens: the row's own run session
            seen.append((args[0], workers, address, max_worker_deaths, recipe.config.name))
            super().__init__(*args, **options)

    monkeypatch.setattr(ray_runner, "RayBatchRunner", InProcess)
    dataset = f"mmfakebench:{FIXTURE / 'source' / 'MMFakeBench_val.json'}"
    result = CliRunner().invoke(app, arguments("t2agent-table3", dataset, tmp_path / "t", scripted, "--limit", "1",
                                               "--workers", "2", "--max-worker-deaths", "4"), env={"COLUMNS": "320"})
    assert result.exit_code == 0, result.output
    assert seen == [(c, 2, None, 4, c) for c in ("mmd-agent-wikipedia", "mmd-agent-tools", "t2agent-base-tools", "t2agent")]
    seen.clear()
    single = CliRunner().invoke(app, ["evaluate", "--config", "standard", "--dataset", dataset, "--backend", "scripted",
                                      "--config-file", str(scripted), "--out", str(tmp_path / "e"), "--no-progress",
                                      "--ray-address", "auto", "--limit", "1"])
    assert single.exit_code == 0, single.output
    assert seen == [("standard", None, "auto", 3, "standard")]


POSTS = 10


def bigger_mmfakebench(folder: Path) -> str:
    """Ten posts in MMFakeBench's format over the fixture's three images."""
    images = [("/real/visualnews/vn_1.jpg", "original"), ("/fake/chatgpt_match_val/match_2.png", "textual_veracity_distortion"),
              ("/fake/chatgpt_match_val/match_3.png", "mismatch")]
    posts = [{"text": f"Post {i}: crowds gather in square {i} for festival number {i * 3}.", "image_path": images[i % 3][0],
              "gt_answers": "True" if images[i % 3][1] == "original" else "Fake", "fake_cls": images[i % 3][1]}
             for i in range(POSTS)]
    (folder / "source").mkdir(parents=True)
    (folder / "source" / "MMFakeBench_val.json").write_text(json.dumps(posts))
    return f"mmfakebench:{folder / 'source' / 'MMFakeBench_val.json'}"


def lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def test_an_interrupted_table_resumes_with_no_row_lost_or_repeated(tmp_path: Path) -> None:
    dataset = bigger_mmfakebench(tmp_path / "data")
    out = tmp_path / "table"
    with scripted_table_server(delay_s=0.05) as server:
        settings = tmp_path / "m3d.yaml"
        settings.write_text(backend_file(server.base_url))
        args = arguments("t2agent-table1", dataset, out, settings, "-o", f"image_root={FIXTURE}", "--concurrency", "2")
        process = subprocess.Popen([sys.executable, "-c", ENTRY, *args], cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(REPO)},
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        second = out / "mmd-agent-wikipedia" / "results.jsonl"
        deadline = time.monotonic() + 120
        while lines(second) < 3 and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert process.poll() is None, "the table finished before it could be interrupted"
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
        assert process.stderr is not None
        assert process.returncode == 130, process.stderr.read().decode()
        cut_at = lines(second)
        assert lines(out / "standard" / "results.jsonl") == POSTS and 3 <= cut_at < POSTS
        assert not (out / "t2agent").exists() and not (out / "table.json").exists()

        resumed = CliRunner().invoke(app, args, env={"COLUMNS": "320"})
    assert resumed.exit_code == 0, resumed.output
    assert f"ran this time: standard 0, mmd-agent-wikipedia {POSTS - cut_at}, t2agent {POSTS} samples" in \
        " ".join(resumed.output.split())
    for config in ("standard", "mmd-agent-wikipedia", "t2agent"):
        raw = [json.loads(line) for line in (out / config / "results.jsonl").read_text().splitlines()]
        assert len(raw) == POSTS == len({r["sample_id"] for r in raw}), config
    table = json.loads((out / "table.json").read_text())
    assert table["complete"] and all(r["samples"] == POSTS for r in table["rows"] if r["config"])
    assert table["bootstrap"]["paired"]

    again = CliRunner().invoke(app, args, env={"COLUMNS": "320"})
    assert again.exit_code == 0 and "ran this time: standard 0, mmd-agent-wikipedia 0, t2agent 0" in " ".join(again.output.split())
    assert json.loads((out / "table.json").read_text())["rows"] == table["rows"]
    shutil.rmtree(out)
