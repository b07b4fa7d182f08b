"""``m3d compare`` read through a pipe, as ``m3d compare A B | cat`` is: 80 columns, no cell cut, the caveats of a
small and uneven comparison said, and comparison.md written beside comparison.json."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Iterator

import pytest

from tests.support.paths import REPO
from tests.support.reproduce_script import backend_file, scripted_table_server

FIXTURE = REPO / "tests" / "fixtures" / "datasets" / "MMFakeBench_val"
DATASET = f"mmfakebench:{FIXTURE / 'source' / 'MMFakeBench_val.json'}"


def m3d(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "FORCE_COLOR", "TERM")}
    return subprocess.run([sys.executable, "-m", "debates", *args], capture_output=True, text=True, timeout=600,
                          env={**env, "PYTHONPATH": str(REPO)})


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, Path]]:
    folder = tmp_path_factory.mktemp("compare")
    with scripted_table_server() as server:
        settings = folder / "m3d.yaml"
        settings.write_text(backend_file(server.base_url))
        made = []
        for config in ("standard", "mmd-agent"):
            out = folder / config
            result = m3d("evaluate", "--config", config, "--dataset", DATASET, "--backend", "scripted", "--config-file",
                         str(settings), "--out", str(out), "--retrieval", "off", "--no-progress")
            assert result.returncode == 0, result.stderr
            made.append(out)
    results = made[1] / "results.jsonl"
    results.write_text(results.read_text().splitlines(keepends=True)[0])  # what an interrupted run leaves
    yield made[0], made[1]


def test_a_piped_comparison_fits_80_columns_and_cuts_no_cell(runs: tuple[Path, Path], tmp_path: Path) -> None:
    first, second = runs
    result = m3d("compare", str(first), str(second), "--out", str(tmp_path / "cmp"), "--resamples", "200")
    assert result.returncode == 0, result.stderr
    assert "…" not in result.stdout
    tables = [line for line in result.stdout.splitlines() if line[:1] in "┏┃┡│└"]
    assert tables and max(len(line) for line in tables) <= 80, "the tables fit a pipe's 80 columns"
    assert f"A = standard@scripted  {first}" in result.stdout and f"B = mmd-agent@scripted  {second}" in result.stdout
    assert "Δ accuracy [95% CI]" in result.stdout
    markdown = (tmp_path / "cmp" / "comparison.md").read_text()
    assert (tmp_path / "cmp" / "comparison.json").is_file()
    assert "| figure | A | B |" in markdown and "## Differences to A (the baseline)" in markdown
    warnings = " ".join(result.stderr.split())
    assert "warning: B is unfinished (1 of 3 samples)" in warnings
    assert "warning: unequal runs: scored samples A 3, B 1; the differences are measured on the 1 samples" in warnings
    assert "warning: small: 1 paired sample(s)" in warnings
    assert "unfinished" in markdown and "small: 1 paired" in markdown


def test_a_report_of_an_unfinished_run_says_so(runs: tuple[Path, Path]) -> None:
    result = m3d("report", str(runs[1]))
    assert result.returncode == 0, result.stderr
    warnings = " ".join(result.stderr.split())
    assert "warning: unfinished: 1 of the 3 samples asked for are done" in warnings
    assert "warning: small: 1 scored sample(s)" in warnings
    assert "**Read with care:**" in (runs[1] / "report.md").read_text()


def test_a_run_answered_from_the_cache_is_said_to_be_in_the_terminal_the_markdown_and_the_plot(
        runs: tuple[Path, Path], tmp_path: Path) -> None:
    import json
    import shutil

    first = runs[0]
    cached = tmp_path / "cached"
    shutil.copytree(first, cached)
    rows = [json.loads(line) for line in (cached / "results.jsonl").read_text().splitlines()]
    for row in rows:  # what a rerun with the same settings writes: every call a cache hit
        row["cache_hits"], row["latency_s"] = row["model_calls"], 0.01
    (cached / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    result = m3d("compare", str(first), str(cached), "--out", str(tmp_path / "cmp"), "--resamples", "200")
    assert result.returncode == 0, result.stderr
    figures = {line.split("│")[1].strip(): line for line in result.stdout.splitlines() if line.startswith("│")}
    assert "0 of 3" in figures["from the cache"] and "3 of 3" in figures["from the cache"]
    assert "n/a / n/a" in figures["latency p50 / p95 s"], "no model was timed in B"
    assert "over the samples that called a model" in " ".join(result.stdout.split())
    warnings = " ".join(result.stderr.split())
    assert "warning: B: from the cache: 3 of 3 finished samples were answered wholly from the response cache" in warnings
    assert "no latency to report" in warnings
    markdown = (tmp_path / "cmp" / "comparison.md").read_text()
    assert "| from the cache | 0 of 3 | 3 of 3 |" in markdown and "B: from the cache" in markdown
    assert (tmp_path / "cmp" / "accuracy_vs_latency.png").stat().st_size > 0
    wrapped = [line for line in result.stdout.splitlines() if not line.startswith(("A = ", "B = ", "written: "))]
    assert max(len(line) for line in wrapped) <= 80, "80 columns in a pipe (the paths stay whole, to be copied)"
