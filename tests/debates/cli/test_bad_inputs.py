"""Bad input through the command line: every case exits non-zero with one ``error:`` line that names
the field and the problem, and no traceback, whatever the input.

Most cases run in-process through typer's CliRunner against a loopback model server; the few whose
failure is about the process itself (the exit path, stderr of a real process, AutoGen's runtime
logging) run ``m3d`` as a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest
from typer.testing import CliRunner

from debates.cli.main import app
from tests.support.fault_server import FaultServer
from tests.support.paths import EXAMPLE_IMAGE, REPO

LAUGHS = "".join(
    f"{name}: &{name} [{', '.join([f'*{prev}'] * 9) if prev else ', '.join(['lol'] * 9)}]\n"
    for prev, name in zip(["", "a", "b", "c", "d", "e", "f", "g", "h"], "abcdefghi")
)
SECRET = "sk-test-PASTEDSECRET0123456789"
EVALUATE = ["--config", "check", "--dataset", "jsonl:posts.jsonl", "-o", "text=text", "-o", "label=label", "-o", "id=id"]


@dataclass
class Case:
    id: str
    args: list[str]
    field: str
    problem: str
    env: dict[str, str] = field(default_factory=dict)
    process: bool = False


CASES = [
    # images
    Case("img-missing", ["check", "--text", "x", "--image", "nope.jpg"], "images[0]", "does not exist"),
    Case("img-dir", ["check", "--text", "x", "--image", "folder.jpg"], "images[0]", "not a regular file"),
    Case("img-empty", ["check", "--text", "x", "--image", "empty.jpg"], "images[0]", "is empty"),
    Case("img-text", ["check", "--text", "x", "--image", "text.jpg"], "images[0]", "not an image file"),
    Case("img-truncated", ["check", "--text", "x", "--image", "truncated.jpg"], "images[0]", "corrupt or truncated"),
    Case("img-headeronly", ["check", "--text", "x", "--image", "headeronly.jpg"], "images[0]", "corrupt or truncated"),
    Case("img-nine", ["check", "--text", "x", *["--image", str(EXAMPLE_IMAGE)] * 9], "images", "over the limit of 8"),
    # the post
    Case("txt-empty", ["check", "--text", " "], "text", "text is empty"),
    Case("txt-long", ["check", "--text", "x" * 9000], "text", "over the limit"),
    Case("date-bad-month", ["check", "--text", "x", "--claim-date", "2020-13-45"], "claim_date", "valid date"),
    Case("date-word", ["check", "--text", "x", "--claim-date", "yesterday"], "claim_date", "valid date"),
    Case("taxonomy-unknown", ["check", "--text", "x", "--taxonomy", "nosuch"], "taxonomy", "unknown taxonomy 'nosuch'"),
    Case("missing-text", ["check"], "text", "give the post with --text, or a recorded claim with --replay-mr2"),
    Case("unknown-option", ["check", "--text", "x", "--colour", "red"], "--colour", "No such option"),
    # backends and their config files
    Case("backend-unknown", ["check", "--text", "x", "--backend", "nosuch"], "backend", "unknown backend 'nosuch'"),
    Case("backend-env-unknown", ["check", "--text", "x"], "backend", "unknown backend 'nosuch'", env={"M3D_BACKEND": "nosuch"}),
    Case("backend-openai-nokey", ["check", "--text", "x", "--backend", "openai"], "OPENAI_API_KEY", "needs an API key"),
    Case("cfgfile-missing", ["check", "--text", "x", "--config-file", "none.yaml"], "config_file", "does not exist"),
    Case("cfgfile-dir", ["check", "--text", "x", "--config-file", "cfgdir"], "config_file", "not a file"),
    Case("cfgfile-malformed", ["check", "--text", "x", "--config-file", "be_malformed.yaml"], "be_malformed.yaml", "not valid YAML"),
    Case("cfgfile-unknown-key", ["check", "--text", "x", "--config-file", "be_unknown.yaml"], "backends.gpu.colour", "Extra inputs"),
    Case("cfgfile-wrong-type", ["check", "--text", "x", "--config-file", "be_types.yaml"], "backends.gpu.temperature", "valid number"),
    Case("cfgfile-bad-kind", ["check", "--text", "x", "--config-file", "be_kind.yaml"], "backends.gpu.kind", "Input should be"),
    Case("cfgfile-bad-url", ["check", "--text", "x", "--config-file", "be_bad_url.yaml"], "backends.gpu.base_url", "http:// or https://"),
    Case("cfgfile-file-url", ["check", "--text", "x", "--config-file", "be_file_url.yaml"], "backends.gpu.base_url", "http:// or https://"),
    Case("cfgfile-cache-file", ["check", "--text", "x", "--config-file", "be_cache_file.yaml"], "backends.gpu.cache_dir", "a file, not a folder"),
    Case("cfgfile-list", ["check", "--text", "x", "--config-file", "be_list.yaml"], "be_list.yaml", "is a mapping"),
    Case("cfgfile-laughs", ["check", "--text", "x", "--config-file", "be_laughs.yaml"], "be_laughs.yaml", "aliases expand"),
    Case("cfgfile-key-as-env-name", ["check", "--text", "x", "--config-file", "be_pasted_key.yaml"], "backends.gpu.api_key_env", "not a key"),
    Case("cfgfile-default-missing", ["check", "--text", "x", "--config-file", "be_ghost.yaml"], "backend", "unknown backend 'ghost'"),
    Case("env-config-missing", ["check", "--text", "x"], "M3D_CONFIG", "does not exist", env={"M3D_CONFIG": "missing.yaml"}),
    Case("env-cache-file", ["check", "--text", "x"], "M3D_CACHE_DIR", "a file, not a folder", env={"M3D_CACHE_DIR": "a_file.txt"}),
    Case("env-local-url", ["check", "--text", "x"], "M3D_LOCAL_BASE_URL", "http:// or https://", env={"M3D_LOCAL_BASE_URL": "file:///etc/passwd"}),
    Case("env-vllm-url", ["check", "--text", "x", "--backend", "vllm"], "M3D_VLLM_BASE_URL", "http:// or https://",
         env={"M3D_VLLM_BASE_URL": "not a url at all"}),
    # debate configurations
    Case("deb-config-traversal", ["debate", "--text", "x", "--config", "../../etc/passwd"], "config", "neither a built-in"),
    Case("deb-config-separator", ["debate", "--text", "x", "--config", "sub/async"], "config", "neither a built-in"),
    Case("deb-config-unknown", ["debate", "--text", "x", "--config", "nosuch"], "config", "no configuration 'nosuch'"),
    Case("deb-config-missing-yaml", ["debate", "--text", "x", "--config", "missing.yaml"], "config", "does not exist"),
    Case("deb-yaml-laughs", ["debate", "--text", "x", "--config", "laughs.yaml"], "laughs.yaml", "aliases expand"),
    Case("deb-yaml-zero-rounds", ["debate", "--text", "x", "--config", "zero_rounds.yaml"], "max_rounds", "greater than or equal to 1"),
    Case("deb-yaml-unknown-keys", ["debate", "--text", "x", "--config", "unknown_keys.yaml"], "colour", "Extra inputs"),
    Case("deb-yaml-python-tag", ["debate", "--text", "x", "--config", "python_tag.yaml"], "python_tag.yaml", "constructor"),
    Case("deb-yaml-empty", ["debate", "--text", "x", "--config", "empty.yaml"], "empty.yaml", "mapping of settings"),
    Case("deb-yaml-list", ["debate", "--text", "x", "--config", "list.yaml"], "list.yaml", "mapping of settings"),
    Case("deb-rounds-huge", ["debate", "--text", "x", "--max-rounds", "1000000"], "max_rounds", "less than or equal to 20"),
    Case("deb-rounds-zero", ["debate", "--text", "x", "--max-rounds", "0"], "--max-rounds", "greater than or equal to 1"),
    Case("deb-human-seat", ["debate", "--text", "x", "--human-seat", "nosuch"], "seat", "no seat named 'nosuch'"),
    Case("deb-human-seat-check", ["debate", "--text", "x", "--config", "check", "--human-seat", "judge"], "human-seat", "no seats"),
    Case("deb-no-text", ["debate"], "text", "give the post with --text"),
    # batch runs
    Case("ev-config-unknown", ["evaluate", "--config", "nosuch", "--dataset", "jsonl:posts.jsonl"], "config", "no configuration 'nosuch'"),
    Case("ev-config-missing-yaml", ["evaluate", "--config", "missing.yaml", "--dataset", "jsonl:posts.jsonl"], "config", "does not exist"),
    Case("ev-ds-nokind", ["evaluate", "--config", "check", "--dataset", "posts.jsonl"], "dataset", "KIND:PATH"),
    Case("ev-opt-unknown", ["evaluate", *EVALUATE, "-o", "colour=red"], "colour", "Extra inputs"),
    Case("ev-ratelimit", ["evaluate", *EVALUATE, "--rate-limit", "local=fast"],
         "rate-limit", "REQUESTS_PER_MINUTE"),
    Case("ev-prices-bad", ["evaluate", *EVALUATE, "--prices", "be_malformed.yaml"],
         "prices", "not valid YAML"),
    Case("ev-prices-laughs", ["evaluate", *EVALUATE, "--prices", "be_laughs.yaml"],
         "prices", "aliases expand"),
    Case("ev-out-is-file", ["evaluate", *EVALUATE, "--out", "a_file.txt", "--no-progress"],
         "out", "is a file"),
    Case("ev-out-under-file", ["evaluate", *EVALUATE, "--out", "a_file.txt/run",
                               "--no-progress"], "out", "cannot create the run folder"),
    Case("ev-limit-zero", ["evaluate", *EVALUATE, "--limit", "0"], "--limit",
         "greater than or equal to 1"),
    Case("cmp-missing", ["compare", "nowhere"], "run", "not a run folder"),
    # process-level: the real exit path and stderr of a real process
    Case("proc-img-headeronly", ["check", "--text", "x", "--image", "headeronly.jpg"], "images[0]", "corrupt or truncated", process=True),
    Case("proc-env-config-missing", ["check", "--text", "x"], "M3D_CONFIG", "does not exist", env={"M3D_CONFIG": "missing.yaml"},
         process=True),
    Case("proc-async-refused", ["debate", "--config", "async", "--text", "x", "--backend", "refusing", "--config-file", "refusing.yaml"],
         "async debate", "refused the request (401)", process=True),
]


@pytest.fixture(scope="module")
def model_url() -> Iterator[str]:
    with FaultServer(rate=0.0) as server:
        yield server.base_url


@pytest.fixture(scope="module")
def refusing_url() -> Iterator[str]:
    with FaultServer(rate=0.0) as server:
        server.refuse_with = (401, "Incorrect API key provided")
        yield server.base_url


def write_inputs(folder: Path, refusing: str) -> None:
    jpeg = EXAMPLE_IMAGE.read_bytes()
    (folder / "folder.jpg").mkdir()
    (folder / "cfgdir").mkdir()
    (folder / "empty.jpg").write_bytes(b"")
    (folder / "text.jpg").write_text("not an image at all\n")
    (folder / "truncated.jpg").write_bytes(jpeg[: len(jpeg) // 2])
    (folder / "headeronly.jpg").write_bytes(jpeg[:600])
    (folder / "a_file.txt").write_text("a file where a folder should be\n")
    files = {
        "be_malformed.yaml": "backends: {gpu: {kind: vllm\n",
        "be_unknown.yaml": "backends:\n  gpu: {kind: vllm, colour: red}\n",
        "be_types.yaml": "backends:\n  gpu: {kind: vllm, temperature: hot}\n",
        "be_kind.yaml": "backends:\n  gpu: {kind: ollama}\n",
        "be_bad_url.yaml": "backends:\n  gpu: {kind: vllm, base_url: not a url at all}\n",
        "be_file_url.yaml": "backends:\n  gpu: {kind: vllm, base_url: 'file:///etc/passwd'}\n",
        "be_cache_file.yaml": "backends:\n  gpu: {kind: vllm, cache_dir: a_file.txt}\n",
        "be_list.yaml": "- kind: vllm\n",
        "be_laughs.yaml": LAUGHS,
        "be_pasted_key.yaml": f"backends:\n  gpu: {{kind: openai, api_key_env: {SECRET}}}\n",
        "be_ghost.yaml": "backend: ghost\n",
        "refusing.yaml": f"backends:\n  refusing: {{kind: vllm, base_url: '{refusing}', vision: false, transport_retries: 0, cache: false}}\n",
        "laughs.yaml": "name: laughs\nprotocol: async\nseats: [{name: a}]\n" + LAUGHS,
        "zero_rounds.yaml": "name: z\nprotocol: async\nmax_rounds: 0\nseats: [{name: a}, {name: b}]\n",
        "unknown_keys.yaml": "name: u\nprotocol: async\ncolour: red\nseats: [{name: a}, {name: b}]\n",
        "python_tag.yaml": "!!python/object/apply:os.system ['echo pwned']\n",
        "empty.yaml": "",
        "list.yaml": "- name: a\n",
        "posts.jsonl": '{"id": "p1", "text": "first post", "label": "fake"}\n{"id": "p2", "text": "second post", "label": "real"}\n',
    }
    for name, text in files.items():
        (folder / name).write_text(text)


def single_error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line, got {len(lines)}:\n{output}"
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_gives_one_line_naming_the_field(case: Case, tmp_path: Path, model_url: str, refusing_url: str) -> None:
    write_inputs(tmp_path, refusing_url)
    env = {"M3D_LOCAL_BASE_URL": model_url, "OPENAI_API_KEY": "", "COLUMNS": "80", **case.env}
    if case.process:
        full = {k: v for k, v in {**os.environ, "PYTHONPATH": str(REPO), **env}.items() if v}
        done = subprocess.run([sys.executable, "-m", "debates", *case.args], cwd=tmp_path, env=full,
                              capture_output=True, text=True, timeout=120)
        code, stdout, stderr = done.returncode, done.stdout, done.stderr
    else:
        result = CliRunner().invoke(app, case.args, env=env)
        assert isinstance(result.exception, SystemExit), f"escaped: {result.exception!r}\n{result.output}"
        code, stdout, stderr = result.exit_code, result.stdout, result.stderr
    assert code != 0
    assert "Traceback" not in stdout + stderr and 'File "' not in stdout + stderr
    assert not stdout.strip(), stdout
    line = single_error_line(stderr)
    assert case.field in line and case.problem in line, line
    assert SECRET not in stdout + stderr


def test_the_table_is_large_enough() -> None:
    assert len(CASES) >= 30
    assert len({c.id for c in CASES}) == len(CASES)
