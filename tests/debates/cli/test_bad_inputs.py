"""Bad input through the command line: every case exits non-zero with one ``error:`` line that names
the field and the problem, and no traceback, whatever the input.

Most cases run in-process through typer's CliRunner against a loopback model server; the few whose
failure is about the process itself (the exit path, stderr of a real process, AutoGen's runtime
logging) run ``m3d`` as a subprocess.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import pytest
from PIL import Image
from typer.testing import CliRunner

from debates.cli.main import app
from tests.support.fault_server import FaultServer
from tests.support.flood_server import FloodServer
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
    Case("cfgfile-bad-kind", ["check", "--text", "x", "--config-file", "be_kind.yaml"], "backends.gpu.kind", "unknown backend kind 'ollama'"),
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
    # YAML the loader refuses instead of accepting silently
    Case("cfgfile-dup-key", ["check", "--text", "x", "--config-file", "be_dup.yaml"], "be_dup.yaml", "is written twice"),
    Case("cfgfile-nan", ["check", "--text", "x", "--config-file", "be_nan.yaml"], "backends.gpu.temperature", "not a finite number"),
    Case("cfgfile-inf", ["check", "--text", "x", "--config-file", "be_inf.yaml"], "backends.gpu.timeout_s", "not a finite number"),
    Case("cfgfile-deep", ["check", "--text", "x", "--config-file", "be_deep.yaml"], "be_deep.yaml", "nested"),
    Case("cfgfile-utf16", ["check", "--text", "x", "--config-file", "be_utf16.yaml"], "be_utf16.yaml", "cannot read"),
    Case("cfgfile-creds-url", ["check", "--text", "x", "--config-file", "be_creds.yaml"], "backends.gpu.base_url",
         "must not carry credentials"),
    Case("cfgfile-answer-cap-zero", ["check", "--text", "x", "--config-file", "be_cap.yaml"], "backends.gpu.max_answer_bytes",
         "greater than 0"),
    Case("env-vllm-url-creds", ["check", "--text", "x", "--backend", "vllm"], "M3D_VLLM_BASE_URL", "must not carry credentials",
         env={"M3D_VLLM_BASE_URL": f"http://user:{SECRET}@127.0.0.1:8000/v1"}),
    Case("env-cache-under-file", ["check", "--text", "x"], "M3D_CACHE_DIR", "a file, not a folder",
         env={"M3D_CACHE_DIR": "a_file.txt/sub"}),
    Case("deb-yaml-dup-key", ["debate", "--text", "x", "--config", "dup.yaml"], "dup.yaml", "is written twice"),
    Case("deb-yaml-nan", ["debate", "--text", "x", "--config", "nan.yaml"], "temperature", "not a finite number"),
    Case("deb-yaml-deep", ["debate", "--text", "x", "--config", "deep.yaml"], "deep.yaml", "nested"),
    Case("deb-yaml-utf16", ["debate", "--text", "x", "--config", "utf16.yaml"], "config", "utf-8"),
    Case("deb-yaml-quorum", ["debate", "--text", "x", "--config", "quorum.yaml"], "majority_quorum", "less than 1"),
    Case("deb-yaml-same-seats", ["debate", "--text", "x", "--config", "same_seats.yaml"], "same_seats.yaml", "unique"),
    Case("deb-yaml-two-judges", ["debate", "--text", "x", "--config", "two_judges.yaml"], "two_judges.yaml", "at most one judge"),
    Case("deb-yaml-no-protocol", ["debate", "--text", "x", "--config", "bad_protocol.yaml"], "protocol", "nosuch"),
    Case("deb-yaml-rounds-text", ["debate", "--text", "x", "--config", "rounds_text.yaml"], "max_rounds", "valid integer"),
    # batch runs: the run folder
    Case("ev-out-empty", ["evaluate", *EVALUATE, "--out", "", "--no-progress"], "--out", "is empty"),
    Case("ev-out-blank", ["evaluate", *EVALUATE, "--out", "  ", "--no-progress"], "--out", "is empty"),
    Case("ev-out-dot", ["evaluate", *EVALUATE, "--out", ".", "--no-progress"], "out", "is not empty and is not a run folder"),
    Case("ev-out-foreign", ["evaluate", *EVALUATE, "--out", "project", "--no-progress"], "out",
         "is not empty and is not a run folder"),
    Case("ev-out-link", ["evaluate", *EVALUATE, "--out", "linked_run", "--no-progress"], "results.jsonl", "symbolic link"),
    Case("ev-out-bad-manifest", ["evaluate", *EVALUATE, "--out", "broken_run", "--no-progress"], "out",
         "is not the manifest of a run"),
    Case("ev-out-other-run", ["evaluate", *EVALUATE, "--out", "other_run", "--no-progress"], "out", "holds a different run"),
    # batch runs: rate limits, stores, prices, options
    Case("ev-ratelimit-nan", ["evaluate", *EVALUATE, "--rate-limit", "local=nan"], "rate-limit", "positive number"),
    Case("ev-ratelimit-inf", ["evaluate", *EVALUATE, "--rate-limit", "local=inf"], "rate-limit", "positive number"),
    Case("ev-ratelimit-negative", ["evaluate", *EVALUATE, "--rate-limit", "local=-5"], "rate-limit", "positive number"),
    Case("ev-ratelimit-tiny", ["evaluate", *EVALUATE, "--rate-limit", "local=0.0001"], "rate-limit", "from 1 to"),
    Case("ev-ratelimit-huge", ["evaluate", *EVALUATE, "--rate-limit", "local=1e12"], "rate-limit", "from 1 to"),
    Case("ev-ratelimit-unknown", ["evaluate", *EVALUATE, "--rate-limit", "nosuch=60"], "rate-limit", "no backend named 'nosuch'"),
    Case("ev-ratelimit-noname", ["evaluate", *EVALUATE, "--rate-limit", "=60"], "rate-limit", "NAME=REQUESTS_PER_MINUTE"),
    Case("ev-store-folder", ["evaluate", *EVALUATE, "--retrieval", "record", "--evidence-store", "cfgdir", "--out", "r1",
                             "--no-progress"], "evidence-store", "is a folder"),
    Case("ev-store-corrupt", ["evaluate", *EVALUATE, "--retrieval", "record", "--evidence-store", "corrupt.sqlite", "--out",
                              "r2", "--no-progress"], "evidence-store", "not a usable evidence store"),
    Case("ev-store-empty", ["evaluate", *EVALUATE, "--evidence-store", ""], "--evidence-store", "is empty"),
    Case("ev-store-replay-missing", ["evaluate", *EVALUATE, "--retrieval", "replay", "--evidence-store", "none.sqlite",
                                     "--out", "r3", "--no-progress"], "store", "does not exist"),
    Case("ev-retrieval-bad", ["evaluate", *EVALUATE, "--retrieval", "sometimes"], "retrieval", "sometimes"),
    Case("ev-prices-dup", ["evaluate", *EVALUATE, "--prices", "prices_dup.yaml"], "prices", "is written twice"),
    Case("ev-prices-missing", ["evaluate", *EVALUATE, "--prices", "none.yaml"], "prices", "does not exist"),
    Case("ev-concurrency-zero", ["evaluate", *EVALUATE, "--concurrency", "0"], "--concurrency", "greater than or equal to 1"),
    Case("ev-max-worker-deaths-zero", ["evaluate", *EVALUATE, "--max-worker-deaths", "0"], "--max-worker-deaths",
         "greater than or equal to 1"),
    Case("ev-workers-zero", ["evaluate", *EVALUATE, "--workers", "0"], "--workers", "greater than or equal to 1"),
    # batch runs: the data set
    Case("ds-missing", ["evaluate", "--config", "check", "--dataset", "jsonl:none.jsonl", "-o", "text=text"], "dataset",
         "does not exist"),
    Case("ds-folder", ["evaluate", "--config", "check", "--dataset", "jsonl:cfgdir", "-o", "text=text"], "dataset",
         "cannot tell the format of cfgdir"),
    Case("ds-unknown-kind", ["evaluate", "--config", "check", "--dataset", "nosuch:posts.jsonl"], "dataset", "nosuch"),
    Case("ds-empty", ["evaluate", "--config", "check", "--dataset", "jsonl:empty.jsonl", "-o", "text=text"], "dataset",
         "is empty"),
    Case("ds-bad-json", ["evaluate", "--config", "check", "--dataset", "jsonl:bad.jsonl", "-o", "text=text"], "bad.jsonl:2",
         "not valid JSON"),
    Case("ds-utf16", ["evaluate", "--config", "check", "--dataset", "jsonl:utf16.jsonl", "-o", "text=text"], "utf16.jsonl",
         "UTF-16"),
    Case("ds-latin1", ["evaluate", "--config", "check", "--dataset", "jsonl:latin1.jsonl", "-o", "text=text"], "latin1.jsonl:2",
         "not UTF-8"),
    Case("ds-deep", ["evaluate", "--config", "check", "--dataset", "jsonl:deep.jsonl", "-o", "text=text"], "deep.jsonl:1",
         "nested"),
    Case("ds-deep-array", ["evaluate", "--config", "check", "--dataset", "jsonl:deep.json", "-o", "text=text"], "deep.json",
         "nested"),
    Case("ds-text-list", ["evaluate", "--config", "check", "--dataset", "jsonl:text_list.jsonl", "-o", "text=text"],
         "text_list.jsonl:1.text", "is a list, not text"),
    Case("ds-text-bool", ["evaluate", "--config", "check", "--dataset", "jsonl:text_bool.jsonl", "-o", "text=text"],
         "text_bool.jsonl:1.text", "is a bool, not text"),
    Case("ds-text-object", ["evaluate", "--config", "check", "--dataset", "jsonl:text_object.jsonl", "-o", "text=text"],
         "text_object.jsonl:1.text", "is a dict, not text"),
    Case("ds-not-object", ["evaluate", "--config", "check", "--dataset", "jsonl:numbers.jsonl", "-o", "text=text"],
         "numbers.jsonl:1", "expected a JSON object"),
    Case("ds-csv-huge-field", ["evaluate", "--config", "check", "--dataset", "csv:huge.csv", "-o", "text=text"], "huge.csv:3",
         "longer than"),
    Case("ds-csv-latin1", ["evaluate", "--config", "check", "--dataset", "csv:latin1.csv", "-o", "text=text"], "latin1.csv:3",
         "not UTF-8"),
    Case("ds-csv-no-header", ["evaluate", "--config", "check", "--dataset", "csv:empty.csv", "-o", "text=text"], "dataset",
         "has no header row"),
    Case("ds-unknown-label", ["evaluate", "--config", "check", "--dataset", "jsonl:odd_label.jsonl", "-o", "text=text",
                              "-o", "label=label"], "odd_label.jsonl:1.label", "unknown label 'maybe'"),
    Case("ds-missing-text", ["evaluate", "--config", "check", "--dataset", "jsonl:posts.jsonl", "-o", "text=body"],
         "posts.jsonl:1.body", "missing"),
    Case("ds-image-outside", ["evaluate", "--config", "check", "--dataset", "jsonl:images/outside.jsonl", "-o", "text=text",
                              "-o", "images=image"], "outside.jsonl:1.image", "outside the data set's image folder"),
    Case("ds-image-dotdot", ["evaluate", "--config", "check", "--dataset", "jsonl:images/dotdot.jsonl", "-o", "text=text",
                             "-o", "images=image"], "dotdot.jsonl:1.image", "outside the data set's image folder"),
    Case("ds-image-link", ["evaluate", "--config", "check", "--dataset", "jsonl:images/linked.jsonl", "-o", "text=text",
                           "-o", "images=image"], "linked.jsonl:1.image", "outside the data set's image folder"),
    Case("ds-image-missing", ["evaluate", "--config", "check", "--dataset", "jsonl:images/missing.jsonl", "-o", "text=text",
                              "-o", "images=image"], "missing.jsonl:1.image", "not found"),
    Case("ds-option-bad-bool", ["evaluate", *EVALUATE, "-o", "images_outside_root=perhaps"], "images_outside_root",
         "valid boolean"),
    Case("ds-option-no-equals", ["evaluate", *EVALUATE, "-o", "label"], "dataset option", "key=value"),
    # images and media
    Case("img-bomb-png", ["check", "--text", "x", "--image", "bomb.png"], "images[0]", "max_decoded_pixels"),
    Case("img-declared-huge", ["check", "--text", "x", "--image", "huge.png"], "images[0]", "over the limit"),
    Case("img-link-to-folder", ["check", "--text", "x", "--image", "cfgdir"], "images[0]", "not a regular file"),
    # other commands that write or read a folder
    Case("rep-out-empty", ["reproduce", "agentm3d-table1", "--dataset", "mmfakebench:x.json", "--backend", "local",
                           "--out", ""], "--out", "is empty"),
    Case("rep-out-foreign", ["reproduce", "agentm3d-table1", "--dataset", "mmfakebench:x.json", "--backend", "local",
                             "--out", "project"], "out", "is not empty"),
    Case("rep-unknown-table", ["reproduce", "nosuch-table", "--dataset", "mmfakebench:x.json", "--backend", "local",
                               "--out", "t"], "table", "nosuch-table"),
    Case("rep-wrong-kind", ["reproduce", "agentm3d-table1", "--dataset", "jsonl:posts.jsonl", "--backend", "local",
                            "--out", "t"], "dataset", "reports on mmfakebench"),
    Case("cmp-out-foreign", ["compare", "good_run", "good_run", "--out", "project"], "out", "is not empty"),
    Case("cmp-bad-manifest", ["compare", "broken_run", "good_run"], "run.json", "is not the manifest of a run"),
    Case("cmp-link-manifest", ["compare", "linked_manifest", "good_run"], "run.json", "symbolic link"),
    Case("cmp-one-run", ["compare", "good_run"], "runs", "at least two"),
    Case("cmp-gold-bad", ["compare", "good_run", "good_run", "--gold", "vibes"], "gold", "neither"),
    Case("report-missing", ["report", "nowhere"], "run", "not a run folder"),
    Case("report-bad-manifest", ["report", "broken_run"], "run.json", "is not the manifest of a run"),
    Case("report-torn-middle", ["report", "edited_run"], "results.jsonl:1", "changed by hand"),
    Case("serve-study-file", ["serve", "--study-dir", "a_file.txt"], "study-dir", "a file, not a folder"),
    Case("serve-runs-missing", ["serve", "--runs", "nowhere"], "runs", "not a folder"),
    Case("export-out-empty", ["export-sft", "good_run", "--out", ""], "--out", "is empty"),
    # endpoint answers
    Case("ep-deep-json", ["check", "--text", "x", "--backend", "flood", "--config-file", "flood.yaml"], "model endpoint",
         "JSON nested", env={"FLOOD_MODE": "deep"}),
    Case("ep-too-large", ["check", "--text", "x", "--backend", "flood", "--config-file", "flood.yaml"], "model endpoint",
         "over the limit of 4096 bytes", env={"FLOOD_MODE": "endless"}),
    Case("ep-declared-large", ["check", "--text", "x", "--backend", "flood", "--config-file", "flood.yaml"], "model endpoint",
         "over the limit of 4096 bytes", env={"FLOOD_MODE": "declared"}),
    Case("ep-negative-usage", ["check", "--text", "x", "--backend", "flood", "--config-file", "flood.yaml"], "model endpoint",
         "impossible number of tokens", env={"FLOOD_MODE": "usage"}),
    Case("ep-not-text", ["check", "--text", "x", "--backend", "flood", "--config-file", "flood.yaml"], "model endpoint",
         "not text", env={"FLOOD_MODE": "content"}),
    # configuration files holding binary or control characters, and configurations that ask for too much
    Case("cfg-nul", ["debate", "--text", "x", "--config", "nul.yaml"], "nul.yaml", "U+0000"),
    Case("cfg-escape", ["debate", "--text", "x", "--config", "escape.yaml"], "escape.yaml", "U+001B on line 2"),
    Case("cfg-binary", ["debate", "--text", "x", "--config", "binary.yaml"], "binary.yaml", "which YAML does not allow"),
    Case("cfgfile-control", ["check", "--text", "x", "--config-file", "be_control.yaml"], "be_control.yaml", "U+0007"),
    Case("prices-control", ["evaluate", *EVALUATE, "--prices", "prices_control.yaml"], "prices", "U+0001"),
    Case("cfg-seats-10k", ["debate", "--text", "x", "--config", "seats_10k.yaml"], "seats_10k.yaml",
         "more than 10000 values, keys and lists"),
    Case("cfg-seats-1500", ["debate", "--text", "x", "--config", "seats_1500.yaml"], "seats: 1500 items",
         "over the limit of 1000 for one list"),
    Case("cfg-seats-40", ["debate", "--text", "x", "--config", "seats_40.yaml"], "seats", "at most 32 items"),
    Case("cfg-calls", ["debate", "--text", "x", "--config", "calls.yaml"], "calls.yaml",
         "up to 7680 model calls per sample"),
    Case("cfg-agentfact-steps", ["check", "--text", "x", "--config", "steps.yaml"], "steps.yaml",
         "over the limit of 5000"),
    Case("cfgfile-backends-1500", ["check", "--text", "x", "--config-file", "be_1500.yaml"], "backends: 1500 items",
         "over the limit of 1000"),
    # replayed traces: outside their folder, nested too deep, items that are not objects
    Case("trace-image-outside", ["check", "--replay-mr2", "trace_out", "--sample-id", "a"], "item 'a'",
         "lies outside the trace folder"),
    Case("trace-deep", ["check", "--replay-mr2", "trace_deep", "--sample-id", "a"], "dataset_items_test.json", "nested"),
    Case("trace-not-objects", ["check", "--replay-mr2", "trace_list", "--sample-id", "a"], "item 'a'",
         "is a list, not an object"),
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
def flood_url() -> Iterator[str]:
    with FloodServer() as server:
        server.mode = "env"
        yield server.base_url


@pytest.fixture(scope="module")
def heavy_images(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Images that are costly to make, made once: a small PNG of 24 megapixels, one that declares 48."""
    folder = tmp_path_factory.mktemp("heavy")
    Image.new("L", (6000, 4000)).save(folder / "bomb.png", optimize=True)
    Image.new("1", (8000, 6000)).save(folder / "huge.png", optimize=True)
    return folder


@pytest.fixture(scope="module")
def refusing_url() -> Iterator[str]:
    with FaultServer(rate=0.0) as server:
        server.refuse_with = (401, "Incorrect API key provided")
        yield server.base_url


def write_inputs(folder: Path, refusing: str, flood: str = "", heavy: Path | None = None) -> None:
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
    write_more_inputs(folder, flood, heavy)


DEBATE = "name: d\nprotocol: async\nseats: [{name: a}, {name: b}]\n"
MANIFEST = {"config": "check", "dataset": "jsonl:posts.jsonl", "backend": "local", "seed": 0, "taxonomy": "binary"}


def write_more_inputs(folder: Path, flood: str, heavy: Path | None) -> None:
    """The inputs of the cases added with the reliability audit: YAML, data sets, run folders, endpoints."""
    deep_yaml = "a: " + "[" * 150 + "]" * 150 + "\n"
    texts = {
        "be_dup.yaml": "backends:\n  gpu: {kind: vllm}\n  gpu: {kind: openai}\n",
        "be_nan.yaml": "backends:\n  gpu: {kind: vllm, temperature: .nan}\n",
        "be_inf.yaml": "backends:\n  gpu: {kind: vllm, timeout_s: .inf}\n",
        "be_deep.yaml": deep_yaml,
        "be_creds.yaml": f"backends:\n  gpu: {{kind: vllm, base_url: 'http://user:{SECRET}@127.0.0.1:8000/v1'}}\n",
        "be_cap.yaml": "backends:\n  gpu: {kind: vllm, max_answer_bytes: 0}\n",
        "dup.yaml": DEBATE + "protocol: sync\n",
        "nan.yaml": DEBATE + "temperature: .nan\n",
        "deep.yaml": DEBATE + deep_yaml.replace("a:", "extra:"),
        "quorum.yaml": DEBATE + "majority_quorum: 1.5\n",
        "same_seats.yaml": "name: d\nprotocol: async\nseats: [{name: a}, {name: a}]\n",
        "two_judges.yaml": "name: d\nprotocol: judged\nseats: [{name: a}, {name: b}, {name: j, role: judge}, {name: k, role: judge}]\n",
        "bad_protocol.yaml": "name: d\nprotocol: nosuch\nseats: [{name: a}]\n",
        "rounds_text.yaml": DEBATE + "max_rounds: many\n",
        "prices_dup.yaml": "gpt-4o: {input: 1.0, output: 2.0}\ngpt-4o: {input: 3.0, output: 4.0}\n",
        "empty.jsonl": "",
        "empty.csv": "",
        "bad.jsonl": '{"id": "a", "text": "fine"}\n{"id": "b", "text": \n',
        "deep.jsonl": '{"text": "x", "extra": ' + "[" * 500 + "]" * 500 + "}\n",
        "deep.json": "[" * 50_000 + "]" * 50_000,
        "text_list.jsonl": '{"text": ["a", "b"]}\n',
        "text_bool.jsonl": '{"text": true}\n',
        "text_object.jsonl": '{"id": "x", "text": {"a": 1}}\n',
        "numbers.jsonl": "1\n2\n",
        "huge.csv": "text,label\nfine,real\n\"" + "x" * (2 << 20) + "\",real\n",
        "odd_label.jsonl": '{"text": "x", "label": "maybe"}\n',
        "flood.yaml": f"backends:\n  flood: {{kind: vllm, base_url: '{flood}', max_answer_bytes: 4096, transport_retries: 0, "
                      "cache: false, vision: false}\n",
    }
    for name, text in texts.items():
        (folder / name).write_text(text)
    binaries = {
        "be_utf16.yaml": "backends: {}\n".encode("utf-16"),
        "utf16.yaml": DEBATE.encode("utf-16"),
        "utf16.jsonl": '{"text": "x"}\n'.encode("utf-16"),
        "latin1.jsonl": '{"text": "fine"}\n{"text": "caf\xe9"}\n'.encode("latin-1"),
        "latin1.csv": "text,label\nfine,real\ncaf\xe9,real\n".encode("latin-1"),
        "corrupt.sqlite": b"not a database, whatever its name says" * 100,
    }
    for name, data in binaries.items():
        (folder / name).write_bytes(data)
    (folder / "project").mkdir()
    (folder / "project" / "report.md").write_text("# someone's own report\n")
    (folder / "linked_run").mkdir()
    (folder / "linked_run" / "results.jsonl").symlink_to(folder / "a_file.txt")
    (folder / "linked_run" / "run.json").write_text(json.dumps(MANIFEST))
    for name, manifest in (("broken_run", None), ("other_run", {**MANIFEST, "config": "async"}), ("good_run", MANIFEST),
                           ("edited_run", MANIFEST)):
        (folder / name).mkdir()
        (folder / name / "run.json").write_text(json.dumps(manifest) if manifest else "{ not json")
    (folder / "good_run" / "results.jsonl").write_text("")
    (folder / "edited_run" / "results.jsonl").write_text("hand-written note\n{}\n")
    (folder / "linked_manifest").mkdir()
    (folder / "linked_manifest" / "run.json").symlink_to(folder / "good_run" / "run.json")
    images = folder / "images"
    images.mkdir()
    (folder / "outside.jpg").write_bytes(EXAMPLE_IMAGE.read_bytes())
    (images / "link.jpg").symlink_to(folder / "outside.jpg")
    for name, reference in (("outside", str(EXAMPLE_IMAGE)), ("dotdot", "../outside.jpg"), ("linked", "link.jpg"),
                            ("missing", "nope.jpg")):
        (images / f"{name}.jsonl").write_text(json.dumps({"text": "x", "image": reference}) + "\n")
    if heavy is not None:
        for name in ("bomb.png", "huge.png"):
            (folder / name).symlink_to(heavy / name)
    write_config_bombs(folder)


def write_config_bombs(folder: Path) -> None:
    """The inputs of the configuration and trace cases of the third audit."""
    texts = {
        "nul.yaml": DEBATE.replace("name: d", "name: d\x00"),
        "escape.yaml": "name: d\nprotocol: \x1b[31masync\nseats: [{name: a}, {name: b}]\n",
        "be_control.yaml": "backends:\n  gpu: {kind: vllm, model: \"bell\x07\"}\n",
        "prices_control.yaml": "gpt-4o: {input: 1.0, output: \x01}\n",
        "seats_10k.yaml": "name: d\nprotocol: async\nseats:\n" + "".join(f"  - {{name: s{i}, role: debater}}\n" for i in range(10_000)),
        "seats_1500.yaml": "name: d\nprotocol: async\nseats:\n" + "".join(f"  - {{name: s{i}}}\n" for i in range(1500)),
        "seats_40.yaml": "name: d\nprotocol: async\nseats:\n" + "".join(f"  - {{name: s{i}}}\n" for i in range(40)),
        "calls.yaml": "name: d\nprotocol: async\nmax_rounds: 20\nseats:\n"
                      + "".join(f"  - {{name: s{i}, turn_policy: {{kind: best_of_n, n: 64}}}}\n" for i in range(3)),
        "steps.yaml": (REPO / "debates" / "configs" / "agentfact.yaml").read_text().replace("max_steps: 12", "max_steps: 100000"),
        "be_1500.yaml": "backends:\n" + "".join(f"  b{i}: {{kind: vllm}}\n" for i in range(1500)),
    }
    for name, text in texts.items():
        (folder / name).write_text(text)
    (folder / "binary.yaml").write_bytes(b"name: d\n" + bytes(range(1, 32)) + b"\n")
    jpeg = EXAMPLE_IMAGE.read_bytes()
    claim = {"caption": "a storm", "label": 1, "image_path": "img/a.jpg", "direct_path": "d/a", "inv_path": "i/a"}
    for name, items in (("trace_out", {"a": {**claim, "image_path": "../../../outside.jpg"}}),
                        ("trace_list", {"a": [claim]})):
        (folder / name / "queries_dataset" / "merge" / "img").mkdir(parents=True)
        (folder / name / "queries_dataset" / "merge" / "img" / "a.jpg").write_bytes(jpeg)
        (folder / name / "dataset_items_test.json").write_text(json.dumps(items))
    (folder / "trace_deep").mkdir()
    (folder / "trace_deep" / "dataset_items_test.json").write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")


def single_error_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line, got {len(lines)}:\n{output}"
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_bad_input_gives_one_line_naming_the_field(case: Case, tmp_path: Path, model_url: str, refusing_url: str,
                                                  flood_url: str, heavy_images: Path) -> None:
    write_inputs(tmp_path, refusing_url, flood_url, heavy_images)
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
    assert code == 2, f"a user's mistake exits with 2, not {code}"
    assert "Traceback" not in stdout + stderr and 'File "' not in stdout + stderr
    assert not stdout.strip(), stdout
    line = single_error_line(stderr)
    assert case.field in line and case.problem in line, line
    assert SECRET not in stdout + stderr


def test_the_table_is_large_enough() -> None:
    assert len(CASES) >= 120
    assert len({c.id for c in CASES}) == len(CASES)


def test_an_error_that_quotes_a_large_configuration_is_cut_to_a_readable_line(tmp_path: Path) -> None:
    """An unknown backend among 900 lists the known names: the line keeps its start and says how much was cut."""
    (tmp_path / "many.yaml").write_text("backends:\n" + "".join(f"  backend_number_{i}: {{kind: vllm}}\n" for i in range(900)))
    result = CliRunner().invoke(app, ["check", "--text", "x", "--config-file", str(tmp_path / "many.yaml"), "--backend", "nosuch"],
                                env={"COLUMNS": "80"})
    line = single_error_line(result.stderr)
    assert result.exit_code == 2 and line.startswith("error: backend: unknown backend 'nosuch'; known: backend_number_0")
    assert len(line) <= 620 and line.endswith("more characters)"), line
