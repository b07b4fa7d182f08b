"""Everything a live evidence run needs, on loopback: providers, a model, a backend file and posts.

Used by the run-path tests and by ``benchmarks/evidence_runs.py``, which drive ``m3d evaluate`` in
their own process. The fetch guards are opened to loopback with the test-only switch
(:func:`retrieval.guards.allow_loopback_in_tests`), and the provider environment variables point
at the loopback server; both are restored on exit.
"""

from __future__ import annotations

import csv
import json
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from retrieval import guards
from tests.support.openai_stub_server import StubOpenAIServer
from tests.support.provider_server import ProviderServer
from tests.support.schema_stub import schema_stub_server

IMAGE_SUFFIXES = {".jpg", ".jpeg", ".png", ".gif"}


@dataclass
class World:
    folder: Path
    providers: ProviderServer
    model: StubOpenAIServer
    config_file: Path
    posts: Path

    def dataset_arguments(self) -> list[str]:
        return ["--dataset", f"jsonl:{self.posts}", "-o", "text=text", "-o", "label=label", "-o", "images=image",
                "-o", "id=id", "-o", "images_outside_root=true"]

    def provider_requests(self) -> int:
        return len(self.providers.requests)


def mediaeval_posts(folder: Path, count: int) -> list[dict[str, str]]:
    """The first ``count`` MediaEval 2016 dev posts with an image on disk, one per image, fake and real
    alternating. Their dates are left out: the loopback server's saved pages were published years
    after these 2012-2013 tweets, so the leakage filter would rightly drop every page by date and
    leave the plumbing under test with nothing to carry."""
    images = {p.stem: p for p in (folder / "images").rglob("*") if p.suffix.lower() in IMAGE_SUFFIXES}
    by_label: dict[str, list[dict[str, str]]] = {"fake": [], "real": []}
    used: set[str] = set()
    csv.field_size_limit(1 << 24)
    with (folder / "posts.txt").open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
            image_id = (row.get("image_id(s)") or "").split(",")[0].strip()
            label = (row.get("label") or "").strip()
            text = (row.get("post_text") or "").strip()
            if label in by_label and image_id in images and image_id not in used and text:
                used.add(image_id)
                by_label[label].append({"id": row["post_id"], "text": text, "image": str(images[image_id]), "label": label})
    mixed = [post for pair in zip(by_label["fake"], by_label["real"]) for post in pair]
    return mixed[:count]


@contextmanager
def loopback_world(folder: Path, mediaeval: Path, posts: int) -> Iterator[World]:
    """Start the provider server and the model stub, write the backend file and the posts, open the guards."""
    folder.mkdir(parents=True, exist_ok=True)
    chosen = mediaeval_posts(mediaeval, posts)
    data = folder / "posts.jsonl"
    data.write_text("".join(json.dumps(p) + "\n" for p in chosen))
    with ProviderServer() as providers, schema_stub_server() as model:
        config = folder / "m3d.yaml"
        config.write_text(
            "backends:\n"
            f"  stub: {{kind: vllm, base_url: '{model.base_url}', model: test-model, vision: true, cache: true,"
            f" cache_dir: '{folder / 'responses'}', transport_retries: 0, concurrency: 8}}\n"
        )
        saved = {k: os.environ.get(k) for k in providers.environment()}
        os.environ.update(providers.environment())
        guards.allow_loopback_in_tests(True)
        try:
            yield World(folder, providers, model, config, data)
        finally:
            guards.allow_loopback_in_tests(False)
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
