"""A live debate is saved as a run folder under the first run root and reviewed like any run: listed with its
state, its post and image shown from the folder itself; the list names roots by their folders."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx

from debates.eval.records import RESULTS
from tests.support.paths import EXAMPLE_IMAGE
from tests.support.runs import make_run, scripted_pool_factory, verite_responder
from tests.support.web import live_debate, running_server, settings_for


def test_a_finished_live_debate_is_saved_and_reviewable(tmp_path: Path) -> None:
    factory, _ = scripted_pool_factory(verite_responder)
    with running_server(settings_for(tmp_path, factory)) as served, httpx.Client(base_url=served.base) as browser:
        _, messages = live_debate(served, browser, {"config": "async", "backend": "scripted", "text": "Storm clouds over the harbour"},
                                  {"image": ("post.jpg", EXAMPLE_IMAGE.read_bytes(), "image/jpeg")}, until=("failed", "saved"))
        saved = messages[-1]
        assert saved["type"] == "saved" and saved["text"].startswith("Saved for review as live/"), messages
        folder = next((tmp_path / "runs" / "live").iterdir())
        assert len((folder / RESULTS).read_text().splitlines()) == 1 and (folder / "report.md").is_file()
        assert (folder / "image-1.jpg").read_bytes() == EXAMPLE_IMAGE.read_bytes()

        listing = browser.get("/review").text.replace("<wbr>", "")  # a path may wrap after its separators
        assert f"runs/live/{folder.name}" in listing and "finished" in listing and ">0/" not in listing
        run_page = browser.get(saved["href"])
        assert run_page.status_code == 200
        sample_id = json.loads((folder / RESULTS).read_text())["sample_id"]
        sample = browser.get("/review/sample", params={"ref": f"0/live/{folder.name}", "id": sample_id})
        assert "Storm clouds over the harbour" in sample.text and 'id="diagnostics"' in sample.text
        image = browser.get("/review/post-image", params={"ref": f"0/live/{folder.name}", "id": sample_id, "index": 0})
        assert image.status_code == 200 and image.headers["content-type"] == "image/png"


def test_the_list_marks_unfinished_and_empty_runs(tmp_path: Path) -> None:
    factory, _ = scripted_pool_factory(verite_responder)
    done = asyncio.run(make_run(tmp_path / "runs" / "done"))
    empty = asyncio.run(make_run(tmp_path / "runs" / "empty"))
    (empty / RESULTS).write_text("")
    partial = asyncio.run(make_run(tmp_path / "runs" / "partial"))
    results = (partial / RESULTS).read_text().splitlines(keepends=True)
    (partial / RESULTS).write_text(results[0])
    for run in (done, empty, partial):  # the manifest says how many samples were asked for, as m3d evaluate's does
        manifest = json.loads((run / "run.json").read_text())
        manifest["load_report"] = {"kind": "verite", "path": "x", "options": {}, "loaded": len(results), "skipped": {},
                                   "taxonomy": "ooc"}
        (run / "run.json").write_text(json.dumps(manifest))
    with running_server(settings_for(tmp_path, factory)) as served:
        listing = " ".join(httpx.get(served.base + "/review").text.replace("<wbr>", "").split())
    assert f"<td class=\"state\">unfinished: 1 of {len(results)}</td>" in listing
    assert "<td class=\"state\">empty: no sample finished</td>" in listing
    assert listing.count("<td class=\"state\">finished</td>") == 1
    assert "runs/done</a>" in listing and "<code>0</code> = runs" in listing
