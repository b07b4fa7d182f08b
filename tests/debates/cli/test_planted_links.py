"""No command writes through a link planted in a folder it writes in: ``evaluate``, ``report``, ``compare``,
``reproduce``, ``export-sft``, ``train``, ``m3d debate --save`` and the web page's saved debates and studies.

Every case plants links where a command will write (the file itself, its temporary file under the old
guessable name, a subfolder) pointing at a file and a folder of the user's, runs the command, and checks
that the user's file and folder are exactly as they were and that the planted link is still a link: the
command either wrote beside it (a temporary file has a random name now) or refused it in one line naming it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Iterator

import pytest
from typer.testing import CliRunner

from debates.cli import training
from debates.cli.main import app
from debates.eval.records import EvalRow
from debates.eval.run.saved_post import save_post_run
from m3d_agents.errors import InputError
from m3d_agents.safe_files import OwnedFolder, UnsafeFile
from m3d_agents.sample import Sample
from m3d_agents.verdict import Verdict
from tests.support.stub_workspace import stub_workspace

PRECIOUS = "a file of the user's that no command may touch\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Iterator[Path]:
    with stub_workspace(tmp_path, posts=3):
        (tmp_path / "precious.txt").write_text(PRECIOUS)
        (tmp_path / "elsewhere").mkdir()
        yield tmp_path


def untouched(workspace: Path) -> None:
    assert (workspace / "precious.txt").read_text() == PRECIOUS
    assert list((workspace / "elsewhere").iterdir()) == [], "nothing was written into the user's folder"


def m3d(*args: str) -> tuple[int, list[str]]:
    result = CliRunner().invoke(app, list(args))
    assert isinstance(result.exception, SystemExit) or result.exception is None, repr(result.exception)
    return result.exit_code, [line for line in result.stderr.splitlines() if line.strip()]


EVALUATE = ["evaluate", "--config", "check", "--dataset", "jsonl:posts.jsonl", "-o", "text=text", "-o", "label=label",
            "-o", "id=id", "--backend", "stub", "--config-file", "m3d.yaml", "--no-progress"]


def refused(code: int, lines: list[str], name: str) -> None:
    assert code == 2 and len(lines) == 1, lines
    assert lines[0].startswith("error: ") and name in lines[0] and "symbolic link" in lines[0], lines[0]


def plant(folder: Path, name: str, target: Path) -> Path:
    link = folder / name
    link.unlink(missing_ok=True)
    link.symlink_to(target)
    return link


# --- the one helper


def test_the_helper_writes_beside_a_planted_temporary_name_and_never_outside(tmp_path: Path) -> None:
    (tmp_path / "precious.txt").write_text(PRECIOUS)
    run = tmp_path / "run"
    run.mkdir()
    for name in ("run.json.tmp", ".run.json.tmp", "report.md.tmp"):
        plant(run, name, tmp_path / "precious.txt")
    folder = OwnedFolder(run)
    folder.write("run.json", '{"a": 1}')
    folder.write("report.md", "# report\n")
    assert (run / "run.json").read_text() == '{"a": 1}' and not (run / "run.json").is_symlink()
    assert (tmp_path / "precious.txt").read_text() == PRECIOUS
    assert sorted(p.name for p in run.iterdir() if not p.is_symlink()) == ["report.md", "run.json"], "no temporary file is left"
    for name in ("../escape.txt", "/tmp/escape.txt", "a/../../escape.txt", "", "."):
        with pytest.raises(InputError, match="not a name inside the folder"):
            folder.write(name, "x")
    assert not (tmp_path / "escape.txt").exists()


@pytest.mark.parametrize("planted", ["reviews", "reviews/deep"])
def test_a_linked_subfolder_is_refused_at_any_depth(tmp_path: Path, planted: str) -> None:
    (tmp_path / "elsewhere").mkdir()
    run = tmp_path / "run"
    (run / planted).parent.mkdir(parents=True, exist_ok=True)
    plant(run, planted, tmp_path / "elsewhere")
    with pytest.raises(UnsafeFile, match="symbolic link"):
        OwnedFolder(run).write("reviews/deep/p1.json", "{}")
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_a_subfolder_made_by_the_product_is_reached_from_the_outer_folder(tmp_path: Path) -> None:
    """A link put in place of ``live`` after the saved debate's folder was made leads nowhere."""
    (tmp_path / "elsewhere").mkdir()
    runs = OwnedFolder(tmp_path / "runs").create()
    saved = runs.new_folder("live/debate-1")
    os.rename(tmp_path / "runs" / "live", tmp_path / "runs" / "moved")
    (tmp_path / "runs" / "live").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafeFile, match="symbolic link"):
        saved.write("report.md", "x")
    assert list((tmp_path / "elsewhere").iterdir()) == []
    with pytest.raises(InputError, match="exists already"):
        runs.new_folder("moved/debate-1")


# --- each command that writes


def test_report_writes_its_manifest_beside_a_planted_temporary_file(workspace: Path) -> None:
    """The audit's case: a link planted as ``run.json.tmp`` after an interrupted run, then ``m3d report``."""
    assert m3d(*EVALUATE, "--out", "run")[0] == 0
    run = workspace / "run"
    manifest = json.loads((run / "run.json").read_text())
    manifest["escalation"] = {"planned": 9, "escalated": 9, "share": 1.0}  # differs from the rows: report rewrites run.json
    (run / "run.json").write_text(json.dumps(manifest))
    plant(run, "run.json.tmp", workspace / "precious.txt")
    code, lines = m3d("report", "run")
    assert code == 0, lines
    assert not (run / "run.json").is_symlink() and json.loads((run / "run.json").read_text())["escalation"] is None
    untouched(workspace)


@pytest.mark.parametrize("name", ["report.md", "metrics.json", "confusion.png", "accuracy_vs_cost.png"])
def test_report_refuses_a_linked_output(workspace: Path, name: str) -> None:
    assert m3d(*EVALUATE, "--out", "run")[0] == 0
    plant(workspace / "run", name, workspace / "precious.txt")
    refused(*m3d("report", "run"), name)
    untouched(workspace)


def test_report_refuses_a_linked_reviews_folder(workspace: Path) -> None:
    assert m3d(*EVALUATE, "--out", "run")[0] == 0
    run = workspace / "run"
    rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
    rows[0]["verdict"]["explanation"] = {"claim_understanding": "a storm photo", "reasoning_logic": "the light"}
    (run / "results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    plant(run, "reviews", workspace / "elsewhere")
    refused(*m3d("report", "run"), "reviews")
    untouched(workspace)
    os.unlink(run / "reviews")
    assert m3d("report", "run")[0] == 0 and len(list((run / "reviews").iterdir())) == 1


@pytest.mark.parametrize("name", ["comparison.md", "comparison.json", "accuracy_vs_latency.png"])
def test_compare_refuses_a_linked_output(workspace: Path, name: str) -> None:
    assert m3d(*EVALUATE, "--out", "runs/a")[0] == 0
    assert m3d(*EVALUATE, "--out", "runs/b", "--seed", "1")[0] == 0
    (workspace / "cmp").mkdir()
    plant(workspace / "cmp", name, workspace / "precious.txt")
    refused(*m3d("compare", "runs/a", "runs/b", "--out", "cmp"), name)
    untouched(workspace)


def test_compare_writes_beside_planted_temporary_names(workspace: Path) -> None:
    assert m3d(*EVALUATE, "--out", "runs/a")[0] == 0
    assert m3d(*EVALUATE, "--out", "runs/b", "--seed", "1")[0] == 0
    (workspace / "cmp").mkdir()
    plant(workspace / "cmp", ".comparison.md.tmp", workspace / "precious.txt")
    code, lines = m3d("compare", "runs/a", "runs/b", "--out", "cmp")
    assert code == 0, lines
    assert "A = " in (workspace / "cmp" / "comparison.md").read_text() or (workspace / "cmp" / "comparison.md").is_file()
    untouched(workspace)


def test_a_run_folder_holding_a_linked_folder_is_refused_before_any_work(workspace: Path) -> None:
    assert m3d(*EVALUATE, "--out", "run", "--limit", "1")[0] == 0
    plant(workspace / "run", "images", workspace / "elsewhere")
    refused(*m3d(*EVALUATE, "--out", "run", "--record-trajectories"), "images")
    untouched(workspace)


@pytest.mark.parametrize("planted", ["table.md", "table.json", "t2agent"])
def test_reproduce_refuses_a_linked_table_file_or_row_folder_before_any_run(tmp_path: Path, planted: str) -> None:
    from tests.support.paths import REPO
    from tests.support.reproduce_script import backend_file, scripted_table_server

    (tmp_path / "precious.txt").write_text(PRECIOUS)
    (tmp_path / "elsewhere").mkdir()
    out = tmp_path / "table"
    out.mkdir()
    plant(out, planted, tmp_path / ("elsewhere" if planted == "t2agent" else "precious.txt"))
    dataset = f"mmfakebench:{REPO / 'tests' / 'fixtures' / 'datasets' / 'MMFakeBench_val' / 'source' / 'MMFakeBench_val.json'}"
    with scripted_table_server() as server:
        (tmp_path / "m3d.yaml").write_text(backend_file(server.base_url))
        refused(*m3d("reproduce", "t2agent-table1", "--dataset", dataset, "--backend", "scripted", "--config-file",
                     str(tmp_path / "m3d.yaml"), "--out", str(out), "--retrieval", "off", "--no-progress"), planted)
        assert server.requests == [], "refused before any sample ran"
    untouched(tmp_path)


def test_export_sft_refuses_a_linked_output(workspace: Path) -> None:
    """(The review file beside it: ``tests/debates/strategies/factguard/training/test_export.py``.)"""
    assert m3d(*EVALUATE, "--out", "run", "--record-trajectories")[0] == 0
    plant(workspace, "sft.jsonl", workspace / "precious.txt")
    refused(*m3d("export-sft", "run", "--out", "sft.jsonl", "--review", "2"), "sft.jsonl")
    untouched(workspace)


def test_debate_save_refuses_a_linked_folder_on_the_way(workspace: Path) -> None:
    (workspace / "saved").mkdir()
    sample = Sample(id="p1", text="a post")
    verdict = Verdict(sample_id="p1", label="fake", is_misinformation=True, confidence=0.8, taxonomy="binary",
                      config="check", backend="stub")
    plant(workspace / "saved", "live", workspace / "elsewhere")
    with pytest.raises(InputError, match="live: is a symbolic link"):
        save_post_run(workspace / "saved", "live/debate-1", "check", sample, verdict, "stub")
    folder = save_post_run(workspace / "saved", "debate-2", "check", sample, verdict, "stub")
    assert (folder / "report.md").is_file() and (folder / "results.jsonl").is_file()
    untouched(workspace)


def test_the_web_page_does_not_save_a_debate_through_a_linked_live_folder(tmp_path: Path) -> None:
    import httpx

    from tests.support.runs import scripted_pool_factory, verite_responder
    from tests.support.web import live_debate, running_server, settings_for

    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "live").symlink_to(tmp_path / "elsewhere")
    factory, _ = scripted_pool_factory(verite_responder)
    with running_server(settings_for(tmp_path, factory)) as served, httpx.Client(base_url=served.base) as browser:
        _, messages = live_debate(served, browser, {"config": "check", "backend": "scripted", "text": "Storm clouds"}, {},
                                  until=("failed", "saved"))
    assert messages[-1]["type"] == "saved" and "could not be saved" in messages[-1]["text"], messages[-1]
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_a_study_answer_is_never_appended_through_a_link(tmp_path: Path) -> None:
    from debates.ui.web.study import StudySession, _record

    (tmp_path / "precious.txt").write_text(PRECIOUS)
    studies = tmp_path / "studies"
    studies.mkdir()
    plant(studies, "study-1.jsonl", tmp_path / "precious.txt")
    session = StudySession("s1", "ann", "jsonl:x", [Sample(id="p1", text="a post", gold_label="fake")], "check", "stub",
                           studies / "study-1.jsonl")
    with pytest.raises(UnsafeFile, match="symbolic link"):
        _record(session, 0, "before", "fake", 7, None, None)
    assert (tmp_path / "precious.txt").read_text() == PRECIOUS


class FakeTrainer:
    """What the training commands use of a TRL trainer; it writes files its own way, with plain ``open``."""

    def __init__(self, output_dir: Path) -> None:
        self.output_dir = output_dir
        self.state = type("State", (), {"global_step": 1})()
        (output_dir / "checkpoint-1").mkdir()
        (output_dir / "checkpoint-1" / "trainer_state.json").write_text("{}")

    def save_model(self, where: str) -> None:
        with open(Path(where) / "model.safetensors", "w") as out:
            out.write("weights")


@pytest.fixture
def fake_sft(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    pytest.importorskip("trl")
    from debates.strategies.factguard.training import sft

    seen: list[Path] = []

    def train_sft(model: Path, data: Path, output_dir: Path, settings: Any, **_: Any) -> FakeTrainer:
        seen.append(output_dir)
        return FakeTrainer(output_dir)

    def plan_sft(model: Path, data: Path, settings: Any, **_: Any) -> Any:
        return SimpleNamespace(model_dir=model, departures=[], workload=None)

    monkeypatch.setattr(sft, "train_sft", train_sft)
    monkeypatch.setattr(sft, "plan_sft", plan_sft)
    monkeypatch.setattr(training, "_train_ready", lambda: None)
    monkeypatch.setattr(training, "_check_memory", lambda *args, **kwargs: None)
    return seen


def test_train_writes_in_a_private_folder_and_moves_in_beside_no_link(tmp_path: Path, fake_sft: list[Path]) -> None:
    (tmp_path / "precious.txt").write_text(PRECIOUS)
    out = tmp_path / "out"
    out.mkdir()
    plant(out, "model.safetensors.tmp", tmp_path / "precious.txt")
    (out / "checkpoint-1").mkdir()
    (out / "checkpoint-1" / "old.json").write_text("{}")
    result = CliRunner().invoke(app, ["train", "sft", "--data", "x.jsonl", "--model", str(tmp_path), "--out", str(out)])
    assert result.exit_code == 0, result.output
    staged = fake_sft[0]
    assert staged.parent == out and staged.name.startswith(".staging-") and not staged.exists()
    assert (out / "model.safetensors").read_text() == "weights"
    assert sorted(p.name for p in (out / "checkpoint-1").iterdir()) == ["trainer_state.json"]
    assert (tmp_path / "precious.txt").read_text() == PRECIOUS


def test_train_refuses_a_link_where_it_would_move_its_output(tmp_path: Path, fake_sft: list[Path]) -> None:
    (tmp_path / "precious.txt").write_text(PRECIOUS)
    (tmp_path / "elsewhere").mkdir()
    out = tmp_path / "out"
    out.mkdir()
    plant(out, "model.safetensors", tmp_path / "precious.txt")
    plant(out, "checkpoint-1", tmp_path / "elsewhere")
    result = CliRunner().invoke(app, ["train", "sft", "--data", "x.jsonl", "--model", str(tmp_path), "--out", str(out)])
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1 and "symbolic link" in lines[0], result.output
    assert (tmp_path / "precious.txt").read_text() == PRECIOUS and list((tmp_path / "elsewhere").iterdir()) == []


def test_rows_read_back_from_a_saved_debate(workspace: Path) -> None:
    """What the helper wrote reads back: a saved debate's row is a valid result row."""
    sample = Sample(id="p1", text="a post")
    verdict = Verdict(sample_id="p1", label="fake", is_misinformation=True, confidence=0.8, taxonomy="binary",
                      config="check", backend="stub")
    folder = save_post_run(workspace / "saved", "one", "check", sample, verdict, "stub")
    row = EvalRow.model_validate_json((folder / "results.jsonl").read_text())
    assert row.label == "fake"
