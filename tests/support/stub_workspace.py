"""A folder set up as a user's project: an ``m3d.yaml`` naming a loopback ``stub`` backend and a
small ``posts.jsonl``, for command-line tests that care about what a run writes, not what it says."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.support.openai_stub_server import StubOpenAIServer
from tests.support.serve_stub import answer


@contextmanager
def stub_workspace(folder: Path, posts: int) -> Iterator[Path]:
    """Yield ``folder`` holding the backend settings and ``posts`` fake-labelled posts, while the stub serves."""
    with StubOpenAIServer(lambda request, n: answer(request, n, 0.0)) as server:
        (folder / "m3d.yaml").write_text(
            f"backends:\n  stub: {{kind: vllm, base_url: '{server.base_url}', model: test-model, cache: false, "
            "vision: false, transport_retries: 0}\n"
        )
        (folder / "posts.jsonl").write_text(
            "".join(json.dumps({"id": f"p{i}", "text": f"Post {i}", "label": "fake"}) + "\n" for i in range(posts))
        )
        yield folder
