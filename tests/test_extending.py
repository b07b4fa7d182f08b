"""The recipes of docs/extending.md for a search provider and a model backend, followed from outside the package.

``tests/support/plugins`` is a distribution as ``pip install`` leaves one: a package registering a
search provider (``saved_pages``) and a backend kind (``replayed``), and a ``.dist-info`` folder whose
entry points name them. A fresh interpreter with that folder on its path runs ``m3d check`` with a
configuration that names the provider and a config file whose backend is of the kind: both are
found through their entry points, validated by name, built and used.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.paths import REPO

PLUGINS = REPO / "tests" / "support" / "plugins"
ANSWER = "The photo shows another bridge, in 2009. FINAL ANSWER: fake"


def m3d(*args: str, tmp_path: Path, plugins: bool = True) -> subprocess.CompletedProcess[str]:
    path = [str(REPO), *([str(PLUGINS)] if plugins else [])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path), "M3D_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("M3D_CONFIG", None)
    env.pop("M3D_BACKEND", None)
    return subprocess.run([sys.executable, "-m", "debates", *args], capture_output=True, text=True, timeout=300,
                          env=env, cwd=tmp_path)


def write(tmp_path: Path, endpoint: str = "https://pages.example.org") -> tuple[Path, Path]:
    config = tmp_path / "saved-pages.yaml"
    config.write_text(
        "name: saved-pages\nprotocol: standard\nseats: [{name: classifier, role: single}]\nretrieval:\n  reverse_image: []\n  web_search: [saved_pages]\n"
        f"  endpoints: {{saved_pages: '{endpoint}'}}\n  summary: {{enabled: false}}\n  judge_unknown_domains: false\n"
    )
    backends = tmp_path / "backends.yaml"
    backends.write_text(f"backend: canned\nbackends:\n  canned:\n    kind: replayed\n    cache: false\n    answer: '{ANSWER}'\n")
    return config, backends


def test_a_provider_and_a_backend_kind_from_another_package_run_a_check(tmp_path: Path) -> None:
    config, backends = write(tmp_path)
    done = m3d("debate", "--config", str(config), "--config-file", str(backends), "--retrieval", "live",
               "--evidence-store", str(tmp_path / "evidence.sqlite"), "--json",
               "--text", "Breaking: the harbour bridge has collapsed this morning", tmp_path=tmp_path)
    assert done.returncode == 0, done.stderr
    verdict = json.loads(done.stdout)
    assert verdict["label"] == "fake" and verdict["backend"] == "canned", "the replayed kind's answer decided"
    pages = [e for e in verdict["evidence"] if e["kind"] == "web_page"]
    assert [e["url"] for e in pages] == ["https://pages.example.org/harbour-bridge"], "found by saved_pages at its endpoint"
    assert "taken in 2009 at a different crossing" in pages[0]["text"] and pages[0]["kept"]
    assert "found by saved_pages" in pages[0]["reason"]


def test_names_the_plug_ins_register_are_checked_like_built_in_ones(tmp_path: Path) -> None:
    config, backends = write(tmp_path)
    text = config.read_text().replace("web_search: [saved_pages]", "web_search: [saved_page]")
    config.write_text(text)
    done = m3d("check", "--config", str(config), "--config-file", str(backends), "--text", "x", tmp_path=tmp_path)
    assert done.returncode != 0
    assert "retrieval.web_search.0: unknown search provider 'saved_page'; known: " in done.stderr
    assert "saved_pages" in done.stderr.split("known: ")[1], "an installed provider is listed among the known ones"
    assert "Traceback" not in done.stderr

    config.write_text("name: wrong-list\nstrategy: check\nretrieval:\n  reverse_image: [saved_pages]\n")
    done = m3d("check", "--config", str(config), "--config-file", str(backends), "--text", "x", tmp_path=tmp_path)
    assert "'saved_pages' is a web search provider, not a reverse image search one" in done.stderr

    config, backends = write(tmp_path)
    backends.write_text("backends:\n  canned:\n    kind: replayed\n    answer: fine\n    anser: typo\n")
    done = m3d("check", "--config", str(config), "--config-file", str(backends), "--backend", "canned", "--text", "x",
               tmp_path=tmp_path)
    assert "backends.canned.anser: Extra inputs are not permitted" in done.stderr, "the kind's settings model checks its fields"


def test_without_the_distribution_the_names_are_unknown(tmp_path: Path) -> None:
    config, backends = write(tmp_path)
    done = m3d("check", "--config", str(config), "--config-file", str(backends), "--text", "x", tmp_path=tmp_path,
               plugins=False)
    assert done.returncode != 0 and "unknown backend kind 'replayed'; known: local, vllm, openai" in done.stderr
    backends.write_text("backend: local\n")
    done = m3d("check", "--config", str(config), "--config-file", str(backends), "--text", "x", tmp_path=tmp_path,
               plugins=False)
    assert done.returncode != 0 and "unknown search provider 'saved_pages'" in done.stderr
