"""A replayed MR2 trace is data from outside: it stays inside its folder, and a damaged or hostile one ends in one
line naming the file and the problem, never an "unexpected" error or a file read from elsewhere.

Each case builds a small trace in MR2's layout (one claim, its image, its caption search with a saved page)
and breaks one thing: a path that leaves the trace (``../``, an absolute path, a link to a file elsewhere, as
the claim's image, its folders or a saved page), JSON nested far too deep, or items and entries that are not
objects. A file outside the trace holds a marker that must never reach the output (it would reach a model).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable

import pytest
from typer.testing import CliRunner

from debates.cli.main import app
from tests.support.paths import EXAMPLE_IMAGE

MARKER = "OUTSIDE-THE-TRACE-7b1e"
PAGE = "<html><head><title>Storm page</title></head><body><p>{}</p></body></html>"


def build_trace(root: Path, item: dict[str, Any] | None = None) -> Path:
    """A one-claim trace: ``a`` with its image, a caption search answered by one saved page, an empty reverse search."""
    merge = root / "queries_dataset" / "merge"
    (merge / "img").mkdir(parents=True)
    (merge / "img" / "a.jpg").write_bytes(EXAMPLE_IMAGE.read_bytes())
    (merge / "direct" / "a").mkdir(parents=True)
    (merge / "inverse" / "a").mkdir(parents=True)
    (merge / "direct" / "a" / "1.html").write_text(PAGE.format("The storm photo is a composite, say the editors. " * 20))
    (merge / "direct" / "a" / "direct_annotation.json").write_text(json.dumps({"images_with_captions": [
        {"page_link": "https://news.example/storm", "page_title": "Storm page", "snippet": "a composite",
         "html_path": "direct/1.html"}]}))
    (merge / "inverse" / "a" / "inverse_annotation.json").write_text(json.dumps({"entities": ["storm"]}))
    claim = {"caption": "A storm over the statue", "label": 1, "image_path": "img/a.jpg", "direct_path": "direct/a",
             "inv_path": "inverse/a", **(item or {})}
    (root / "dataset_items_test.json").write_text(json.dumps({"a": claim}))
    return root


def outside(tmp_path: Path) -> Path:
    """A folder beside the trace with an image, a page and annotations that all carry the marker."""
    folder = tmp_path / "elsewhere"
    (folder / "a").mkdir(parents=True)
    (folder / "secret.jpg").write_bytes(EXAMPLE_IMAGE.read_bytes() + MARKER.encode())
    (folder / "secret.html").write_text(PAGE.format(f"{MARKER} " * 40))
    (folder / "a" / "direct_annotation.json").write_text(json.dumps({"images_with_captions": [
        {"page_link": "https://evil.example/", "page_title": MARKER, "snippet": MARKER, "html_path": "x/secret.html"}]}))
    (folder / "a" / "inverse_annotation.json").write_text(json.dumps({"entities": [MARKER]}))
    return folder


def evidence(trace: Path) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["evidence", "--replay-mr2", str(trace), "--sample-id", "a"], env={"COLUMNS": "200"})
    assert isinstance(result.exception, SystemExit) or result.exception is None, repr(result.exception)
    return result.exit_code, result.stdout, result.stderr


def one_error(code: int, stdout: str, stderr: str, *words: str) -> None:
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert "unexpected" not in lines[0] and "Traceback" not in stdout + stderr
    for word in words:
        assert word in lines[0], lines[0]
    assert MARKER not in stdout + stderr


def test_the_trace_as_built_gives_its_page(tmp_path: Path) -> None:
    code, stdout, _ = evidence(build_trace(tmp_path / "trace"))
    assert code == 0 and "news.example/storm" in stdout and "not used" not in stdout, stdout


@pytest.mark.parametrize("how", ["dotdot", "absolute", "link-out"])
def test_a_claims_image_outside_the_trace_is_refused_naming_the_claim(tmp_path: Path, how: str) -> None:
    elsewhere = outside(tmp_path)
    image = {"dotdot": "../../../elsewhere/secret.jpg", "absolute": str(elsewhere / "secret.jpg"), "link-out": "img/link.jpg"}[how]
    trace = build_trace(tmp_path / "trace", {"image_path": image})
    (trace / "queries_dataset" / "merge" / "img" / "link.jpg").symlink_to(elsewhere / "secret.jpg")
    one_error(*evidence(trace), "item 'a'", "its image", "lies outside the trace folder")


def test_a_link_inside_the_trace_to_its_own_file_is_fine(tmp_path: Path) -> None:
    trace = build_trace(tmp_path / "trace", {"image_path": "img/same.jpg"})
    (trace / "queries_dataset" / "merge" / "img" / "same.jpg").symlink_to(trace / "queries_dataset" / "merge" / "img" / "a.jpg")
    assert evidence(trace)[0] == 0


Breaker = Callable[[Path, Path], dict[str, Any] | None]


def folder_out(trace: Path, elsewhere: Path) -> dict[str, Any]:
    return {"direct_path": "../../../elsewhere/a"}


def folder_linked(trace: Path, elsewhere: Path) -> None:
    direct = trace / "queries_dataset" / "merge" / "direct"
    os.rename(direct / "a", direct / "moved")
    (direct / "a").symlink_to(elsewhere / "a")


def page_linked(trace: Path, elsewhere: Path) -> None:
    page = trace / "queries_dataset" / "merge" / "direct" / "a" / "1.html"
    page.unlink()
    page.symlink_to(elsewhere / "secret.html")


def annotation_linked(trace: Path, elsewhere: Path) -> None:
    annotation = trace / "queries_dataset" / "merge" / "direct" / "a" / "direct_annotation.json"
    annotation.unlink()
    annotation.symlink_to(elsewhere / "a" / "direct_annotation.json")


@pytest.mark.parametrize("breaker, what", [
    (folder_out, "its direct_annotation.json"), (folder_linked, "its direct_annotation.json"),
    (page_linked, "its saved page"), (annotation_linked, "its direct_annotation.json"),
], ids=["folder-dotdot", "folder-link", "page-link", "annotation-link"])
def test_a_search_that_leads_out_of_the_trace_is_refused_and_nothing_of_it_is_read(tmp_path: Path, breaker: Breaker,
                                                                                   what: str) -> None:
    elsewhere = outside(tmp_path)
    trace = build_trace(tmp_path / "trace")
    changes = breaker(trace, elsewhere)
    if changes:
        trace = build_trace(tmp_path / "trace2", changes)
    code, stdout, stderr = evidence(trace)
    assert code == 0, stderr
    refused = [line for line in stdout.splitlines() if line.startswith("not used:")]
    assert len(refused) == 1 and "item 'a'" in refused[0] and what in refused[0] and "lies outside the trace folder" in refused[0], stdout
    assert MARKER not in stdout + stderr, "nothing outside the trace reached the output"


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize("items, words", [
    (DEEP, ("dataset_items_test.json", "nested")),
    ('{"a": ' + "[" * 5_000 + "]" * 5_000 + "}", ("dataset_items_test.json", "nested")),
    ('[1, 2, 3]', ("dataset_items_test.json", "is a list, not an object of claims")),
    ('{"a": [1, 2]}', ("item 'a'", "is a list, not an object")),
    ('{"a": 7}', ("item 'a'", "is a number, not an object")),
    ('{"a": {"caption": ["x"], "image_path": "img/a.jpg", "direct_path": "d", "inv_path": "i"}}', ("item 'a'", "caption")),
    ('{"a": {"caption": "x"}}', ("item 'a'", "image_path")),
    ('{"a": "\\u0000\\u0001"}', ("item 'a'", "is text, not an object")),
], ids=["deep-100k", "deep-in-item", "list", "item-list", "item-number", "caption-list", "missing-field", "item-text"])
def test_a_damaged_items_file_is_one_line_naming_it(tmp_path: Path, items: str, words: tuple[str, ...]) -> None:
    trace = build_trace(tmp_path / "trace")
    (trace / "dataset_items_test.json").write_text(items)
    one_error(*evidence(trace), *words)


@pytest.mark.parametrize("annotation, words", [
    (DEEP, ("direct_annotation.json", "nested")),
    ('[]', ("direct_annotation.json", "is a list, not an object")),
    ('{"images_with_captions": [1, "x"]}', ("images_with_captions[0]", "is a number, not an object")),
    ('{"images_with_captions": {"page_link": "x"}}', ("images_with_captions", "is an object, not a list")),
    ('{"images_with_captions": [{"page_link": ["not", "a", "url"]}]}', ("images_with_captions[0]", "url")),
    ('{"images_with_captions": [{"page_link": "https://a.example/", "page_title": {"t": 1}}]}',
     ("images_with_captions[0]", "title")),
], ids=["deep", "list", "entries-not-objects", "group-not-list", "link-not-text", "title-not-text"])
def test_a_damaged_annotation_costs_that_search_alone_with_one_line_naming_it(tmp_path: Path, annotation: str,
                                                                              words: tuple[str, ...]) -> None:
    trace = build_trace(tmp_path / "trace")
    (trace / "queries_dataset" / "merge" / "direct" / "a" / "direct_annotation.json").write_text(annotation)
    code, stdout, stderr = evidence(trace)
    assert code == 0 and "Traceback" not in stdout + stderr, stderr
    refused = [" ".join(line.split()) for line in stdout.splitlines() if line.startswith("not used:")]
    assert len(refused) == 1 and "unexpected" not in refused[0], stdout
    for word in words:
        assert word in refused[0], refused[0]


def test_a_damaged_reverse_search_names_its_file(tmp_path: Path) -> None:
    trace = build_trace(tmp_path / "trace")
    (trace / "queries_dataset" / "merge" / "inverse" / "a" / "inverse_annotation.json").write_text('{"entities": 5}')
    code, stdout, _ = evidence(trace)
    refused = [line for line in stdout.splitlines() if line.startswith("not used:")]
    assert code == 0 and len(refused) == 1 and "inverse_annotation.json: entities" in refused[0] and "not a list" in refused[0]
