"""The notebooks run headless, top to bottom, on the embedded model, with small limits injected.

Parameters are injected the way papermill does it: a cell tagged ``injected-parameters`` right
after the cell tagged ``parameters``. In the human notebook, scripted answers stand in for the
person. Each notebook starts the embedded llama.cpp server itself, as it does for a person; the
three share one response cache that starts empty. Retrieval is left at the notebooks' default,
which is offline; every proxy points at a closed port, so a call to the web would fail and show.
Notebook 01 runs through ``jupyter nbconvert --execute``, as the notebooks guide tells a user to.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import REPO, shared_data

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")
pytest.importorskip("ipykernel")

NOTEBOOKS = REPO / "notebooks"
NAMES = ["01_run_debates.ipynb", "02_human_in_the_chat.ipynb", "03_async_vs_judged.ipynb"]
CELL_TIMEOUT_S = 3600  # a backstop against a hung kernel, not a speed requirement


def test_committed_notebooks_carry_no_outputs_and_have_a_parameters_cell() -> None:
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == NAMES
    for name in NAMES:
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        nbformat.validate(nb)
        code = [c for c in nb.cells if c.cell_type == "code"]
        assert all(c.outputs == [] and c.execution_count is None for c in code), f"{name} has outputs"
        tagged = [c for c in code if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1, f"{name} needs exactly one cell tagged 'parameters'"
        assert 'BACKEND = "local"' in tagged[0].source
        assert 'RETRIEVAL = "off"' in tagged[0].source, f"{name} must run offline by default"


def test_every_import_of_the_notebooks_resolves_and_the_configurations_table_matches_the_configs() -> None:
    """A moved module must not leave a notebook that fails at its first cell (the integration tests
    that run them end to end are not in every test run)."""
    import ast
    import importlib
    import importlib.util

    for name in NAMES:
        nb = nbformat.read(NOTEBOOKS / name, as_version=4)
        for cell in (c for c in nb.cells if c.cell_type == "code"):
            for node in ast.walk(ast.parse("\n".join(line for line in cell.source.splitlines() if not line.startswith(("%", "!"))))):
                if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    module = importlib.import_module(node.module)
                    missing = [a.name for a in node.names if not hasattr(module, a.name)
                               and importlib.util.find_spec(f"{node.module}.{a.name}") is None]
                    assert not missing, f"{name}: {node.module} has no {missing}"
    text = nbformat.read(NOTEBOOKS / "01_run_debates.ipynb", as_version=4).cells[2].source
    assert "| `async` | Two agents" in text and "Three agents" not in text and "All agents" not in text


@pytest.fixture(scope="module")
def kernel_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The kernels' environment: this checkout first on the path, and one response cache for the run.

    The embedded backend keeps its model and limits; only its per-call timeout is raised, so that a
    busy machine makes the run slower, not failed.
    """
    folder = tmp_path_factory.mktemp("notebook-env")
    config = folder / "m3d.yaml"
    config.write_text("backends:\n  local: {kind: local, timeout_s: 900}\n")
    env = {k: v for k, v in os.environ.items() if k not in ("M3D_BACKEND", "M3D_LOCAL_BASE_URL")}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    env["M3D_CACHE_DIR"] = str(folder / "cache")
    env["M3D_CONFIG"] = str(config)
    closed = "http://127.0.0.1:9"  # the discard port: nothing listens, so a request to the web fails at once
    env.update({"HTTP_PROXY": closed, "HTTPS_PROXY": closed, "ALL_PROXY": closed, "NO_PROXY": "127.0.0.1,localhost"})
    return env


NETWORK_FAILURES = ("search failed", "DNSError", "ConnectError", "Connection refused", "ProxyError")


def nbconvert(name: str, parameters: dict[str, Any], env: dict[str, str], folder: Path) -> Any:
    """``jupyter nbconvert --to notebook --execute`` on the notebook with ``parameters`` injected; the executed notebook."""
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    inject(nb, parameters)
    (folder / "notebooks").mkdir()
    (folder / "examples").symlink_to(REPO / "examples")  # the notebook's ../examples, as beside the repository's
    source = folder / "notebooks" / name
    nbformat.write(nb, source)
    done = subprocess.run(
        [str(Path(sys.executable).with_name("jupyter")), "nbconvert", "--to", "notebook", "--execute",
         f"--ExecutePreprocessor.timeout={CELL_TIMEOUT_S}", "--output", f"executed-{name}", str(source)],
        cwd=folder, env=env, capture_output=True, text=True, timeout=3 * CELL_TIMEOUT_S,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    return nbformat.read(folder / "notebooks" / f"executed-{name}", as_version=4)


def inject(nb: Any, parameters: dict[str, Any]) -> None:
    index = next(i for i, c in enumerate(nb.cells) if "parameters" in c.metadata.get("tags", []))
    injected = nbformat.v4.new_code_cell("\n".join(f"{key} = {value!r}" for key, value in parameters.items()))
    injected.metadata["tags"] = ["injected-parameters"]
    nb.cells.insert(index + 1, injected)


def execute(name: str, parameters: dict[str, Any], env: dict[str, str]) -> Any:
    nb = nbformat.read(NOTEBOOKS / name, as_version=4)
    inject(nb, parameters)
    client = nbclient.NotebookClient(
        nb, timeout=CELL_TIMEOUT_S, kernel_name="python3", resources={"metadata": {"path": str(NOTEBOOKS)}}
    )
    client.execute(env=env)
    return nb


def outputs_text(nb: Any) -> str:
    """Everything the notebook showed: streams, HTML, plain text and error tracebacks."""
    parts = []
    for cell in nb.cells:
        for out in cell.get("outputs", []):
            parts.append(out.get("text", ""))
            data = out.get("data", {})
            parts.append(data.get("text/html", "") + data.get("text/plain", "") + data.get("text/markdown", ""))
    return "\n".join(parts)


def images(nb: Any) -> int:
    return sum(any(kind.startswith("image/") for kind in out.get("data", {}))
               for cell in nb.cells for out in cell.get("outputs", []))


@pytest.mark.integration
@pytest.mark.notebook
def test_run_debates_notebook_runs_every_configuration_headless_and_offline(kernel_env: dict[str, str], tmp_path: Path) -> None:
    data = shared_data()
    # One of each kind of turn order: in turn (async), judged, and concurrent rounds with a retrieval
    # desk (disambiguation). The others run on scripted models in test_debates.py.
    configs = ["async", "judged", "disambiguation"]
    nb = nbconvert("01_run_debates.ipynb", {"CONFIGS": configs, "MAX_ROUNDS": 1, "DATA_DIR": str(data)}, kernel_env, tmp_path)
    shown = outputs_text(nb)
    assert not [word for word in NETWORK_FAILURES if word in shown], "the default run asks nothing of the web"
    for name in configs:
        assert f"<h3>{name}</h3>" in shown
    assert shown.count("Verdict on post") == len(configs)
    assert shown.count("round 1") >= 2 * len(configs)  # every debate streamed its turns
    assert shown.count("evidence: retrieval off") == len(configs), "each verdict says where its evidence came from"
    assert images(nb) >= 1  # the post's image


@pytest.mark.integration
@pytest.mark.notebook
def test_human_notebook_with_scripted_person(kernel_env: dict[str, str]) -> None:
    data = shared_data()
    answers = [
        "The photo looks staged: the lighting does not match the scene described.\nFINAL ANSWER: fake\nCONFIDENCE: 0.7",
        "I keep my view: nothing in your arguments shows the image is authentic.\nFINAL ANSWER: fake\nCONFIDENCE: 0.8",
    ]
    nb = execute(
        "02_human_in_the_chat.ipynb",
        {"SEAT": "debater", "MAX_ROUNDS": 2, "DATA_DIR": str(data), "SCRIPTED_ANSWERS": answers},
        kernel_env,
    )
    shown = outputs_text(nb)
    assert "agent_a (you)" in shown
    assert "the lighting does not match" in shown
    assert "agent_b</b>" in shown and "agent_c</b>" in shown
    assert shown.count("Verdict on post") == 1


@pytest.mark.integration
@pytest.mark.notebook
def test_async_vs_judged_notebook_compares_two_runs(kernel_env: dict[str, str], tmp_path: Path) -> None:
    data = shared_data("mediaeval2016-dev")
    runs = tmp_path / "runs"
    nb = execute(
        "03_async_vs_judged.ipynb",
        {"LIMIT": 2, "MAX_ROUNDS": 1, "CONCURRENCY": 1, "DATA_DIR": str(data.parent), "RUNS_DIR": str(runs),
         "RESAMPLES": 200},
        kernel_env,
    )
    shown = outputs_text(nb)
    run_dirs = sorted(p.parent for p in runs.rglob("run.json"))
    assert len(run_dirs) == 2
    for run in run_dirs:
        rows = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines()]
        assert len(rows) == 2 and all(r["status"] in ("ok", "abstained") for r in rows)
        assert (run / "confusion.png").is_file()
    assert "Δ accuracy" in shown and "paired bootstrap" in shown
    assert images(nb) >= 4  # two confusion matrices and the two trade-off plots
