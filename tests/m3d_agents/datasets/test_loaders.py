"""Each loader on fixtures that mirror the real file formats, or on the real shared data."""

from __future__ import annotations

import json
import os
from collections import Counter
from datetime import date
from pathlib import Path

import pytest

from m3d_agents.datasets import load_dataset
from m3d_agents.errors import InputError
from tests.support.paths import REPO, shared_data

FIXTURES = REPO / "tests" / "fixtures" / "datasets"


def test_mmfakebench_maps_mismatch_onto_cross_modal_and_finds_images_under_the_split_folder() -> None:
    loaded = load_dataset(f"mmfakebench:{FIXTURES / 'MMFakeBench_val/source/MMFakeBench_val.json'}")
    assert [s.gold_label for s in loaded.samples] == [
        "original", "textual_veracity_distortion", "cross_modal_consistency_distortion"]
    assert all(s.taxonomy == "m3d" and s.images[0].is_file() for s in loaded.samples)
    assert loaded.samples[1].images[0].name == "match_2.png"


def test_newsclippings_joins_captions_and_images_by_visualnews_id() -> None:
    root = FIXTURES / "newsclippings"
    loaded = load_dataset(f"newsclippings:{root / 'merged_balanced/val.json'}",
                          {"visualnews": str(root / "visual_news/origin/data.json")})
    pristine, falsified = loaded.samples
    assert (pristine.gold_label, falsified.gold_label) == ("pristine", "falsified")
    assert falsified.text == "Police clear protesters from the bridge."
    assert falsified.images[0].name == "22.jpg"


def test_newsclippings_needs_the_visualnews_annotations() -> None:
    with pytest.raises(InputError, match="visualnews"):
        load_dataset(f"newsclippings:{FIXTURES / 'newsclippings/merged_balanced/val.json'}")


def test_verite_counts_miscaptioned_and_out_of_context_as_falsified() -> None:
    loaded = load_dataset(f"verite:{FIXTURES / 'VERITE/VERITE.csv'}")
    assert [s.gold_label for s in loaded.samples] == ["pristine", "falsified", "falsified"]
    assert loaded.samples[0].images == loaded.samples[1].images


def test_rwpost_uses_claim_post_text_images_and_claim_date_but_not_the_fact_check() -> None:
    loaded = load_dataset(f"rwpost:{FIXTURES / 'AgentFact/Dataset_RW-Post/demo/demo.jsonl'}")
    first, second, third = loaded.samples
    assert [s.gold_label for s in loaded.samples] == ["true", "false", "mixture"]
    assert first.text.startswith("Claim: A video shows") and "Post: Wave pool" in first.text
    assert second.text == "A photograph shows three singers performing together at a 1985 benefit concert."
    assert first.images[0].name == "demo_0.jpg" and third.images == []
    assert first.metadata.claim_date == date(2022, 9, 30), "claims are dated as claim_time gives them (month ends)"
    assert all("snopes" not in s.model_dump_json() for s in loaded.samples)


def test_mocheg_groups_evidence_rows_by_claim_and_leaves_out_proof_images() -> None:
    loaded = load_dataset(f"mocheg:{FIXTURES / 'mocheg/test/Corpus2.csv'}")
    assert [(s.id, s.gold_label) for s in loaded.samples] == [
        ("mocheg-7", "false"), ("mocheg-8", "true"), ("mocheg-9", "unproven")]
    assert all(s.images == [] for s in loaded.samples)


def test_amg_reads_concatenated_objects_and_numeric_labels() -> None:
    loaded = load_dataset(f"amg:{FIXTURES / 'amg/dataset/test.json'}")
    assert [s.gold_label for s in loaded.samples] == ["real", "image_fabrication", "time_inconsistency"]
    assert loaded.samples[0].metadata.claim_date == date(2021, 12, 28)


def test_amg_image_lookup_errors_or_skips_as_asked() -> None:
    spec = f"amg:{FIXTURES / 'amg/dataset/test.json'}"
    with pytest.raises(InputError, match=r"test.json:13.Id.*4059"):
        load_dataset(spec, {"image_root": str(FIXTURES / "amg/media")})
    loaded = load_dataset(spec, {"image_root": str(FIXTURES / "amg/media"), "missing_images": "skip"})
    assert [s.images[0].name for s in loaded.samples] == ["4057.jpg", "4058.png"]
    assert loaded.report.skipped == {"image file not found (Id)": 1}


def test_fakesv_skips_debunking_videos_with_a_counted_reason() -> None:
    loaded = load_dataset(f"fakesv:{FIXTURES / 'fakesv/data.json'}")
    assert [(s.id, s.gold_label) for s in loaded.samples] == [("video-3xa1", "fake"), ("video-3xa2", "real")]
    assert loaded.samples[0].video.video_id == "3xa1" and loaded.samples[0].video.path is None
    assert loaded.samples[1].video.path.name == "3xa2.mp4"
    assert "On-screen text: 冰雹 视频" in loaded.samples[0].text
    assert loaded.report.skipped == {"label '辨析' has no mapping onto the chosen taxonomy": 1}


def test_generic_jsonl_with_column_mapping_and_label_map(tmp_path: Path) -> None:
    image = FIXTURES / "VERITE/images/true_0.jpg"
    rows = [
        {"uid": "a", "post": "first post", "verdict": "hoax", "pics": [str(image)], "lang": "en"},
        {"uid": "b", "post": "second post", "verdict": "legit", "pics": [], "lang": "fr"},
        {"uid": "c", "post": "third post", "verdict": "satire", "pics": [], "lang": "en"},
    ]
    path = tmp_path / "posts.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    loaded = load_dataset(f"jsonl:{path}", {"text": "post", "label": "verdict", "id": "uid", "images": "pics",
                                             "language": "lang", "label_map": "hoax=fake,legit=real,satire=skip",
                                             "images_outside_root": "true"})
    assert [(s.id, s.gold_label, s.metadata.language) for s in loaded.samples] == [("a", "fake", "en"), ("b", "real", "fr")]
    assert loaded.samples[0].images == [image]
    assert loaded.report.skipped == {"label 'satire' has no mapping onto the chosen taxonomy": 1}


def test_generic_csv_errors_name_the_row_and_field(tmp_path: Path) -> None:
    path = tmp_path / "posts.csv"
    path.write_text("text,label,image\nfine,real,\nbroken,maybe,\n")
    with pytest.raises(InputError, match=r"posts.csv:3.label: unknown label 'maybe'"):
        load_dataset(f"csv:{path}", {"text": "text", "label": "label"})
    path.write_text("text,label,image\nfine,real,nowhere.jpg\n")
    with pytest.raises(InputError, match=r"posts.csv:2.image: image 'nowhere.jpg' not found"):
        load_dataset(f"csv:{path}", {"text": "text", "label": "label", "images": "image"})


def test_bad_specs_and_options_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="not KIND:PATH"):
        load_dataset("mediaeval")
    with pytest.raises(InputError, match="unknown dataset kind 'nope'"):
        load_dataset(f"nope:{tmp_path}")
    with pytest.raises(InputError, match=r"dataset option colour.*options of verite"):
        load_dataset(f"verite:{FIXTURES / 'VERITE/VERITE.csv'}", {"colour": "blue"})
    duplicate = tmp_path / "dup.jsonl"
    duplicate.write_text('{"id": "x", "t": "a"}\n{"id": "x", "t": "b"}\n')
    with pytest.raises(InputError, match="'x' occurs twice"):
        load_dataset(f"jsonl:{duplicate}", {"text": "t", "id": "id"})


def test_mediaeval_real_data_one_post_per_image_is_balanced() -> None:
    root = shared_data("mediaeval2016-dev")
    everything = load_dataset(f"mediaeval:{root}")
    assert len(everything.samples) > 13000
    assert everything.report.skipped == {"no image file for any of its image ids": 2213}
    loaded = load_dataset(f"mediaeval:{root}", {"one_post_per_image": "true"})
    images = [s.images[0] for s in loaded.samples]
    assert len(images) == len(set(images)) == 378
    assert Counter(s.gold_label for s in loaded.samples) == {"real": 190, "fake": 188}
    first = loaded.samples[0]
    assert first.id == "324597532548276224" and first.images[0].name == "boston_fake_03.jpg"
    assert first.metadata.claim_date == date(2013, 4, 17)


def test_mediaeval_language_filter_keeps_only_the_asked_languages() -> None:
    root = shared_data("mediaeval2016-dev")
    loaded = load_dataset(f"mediaeval:{root / 'posts.txt'}", {"one_post_per_image": "true", "language": "es"})
    assert loaded.samples and all(s.metadata.language == "es" for s in loaded.samples)
    assert loaded.report.skipped["language not in es"] > 0
    assert "324554646976868352" in {s.id for s in loaded.samples}  # "Brutal lo que se puede conseguir ..."


def test_mr2_unverified_has_no_binary_label_but_maps_onto_factcheck() -> None:
    path = shared_data("mr2-sample", "dataset_items_test.json")
    binary = load_dataset(f"mr2:{path}")
    assert {s.id: s.gold_label for s in binary.samples} == {
        "mr2-430": "fake", "mr2-4775631591839692": "real", "mr2-4806303862493315": "real", "mr2-1159": "fake"}
    assert binary.report.skipped == {"label '2' has no mapping onto the chosen taxonomy": 1}
    factcheck = load_dataset(f"mr2:{path}", {"taxonomy": "factcheck"})
    assert Counter(s.gold_label for s in factcheck.samples) == {"true": 2, "false": 2, "unproven": 1}
    assert all(s.images[0].is_file() for s in factcheck.samples)


@pytest.mark.parametrize("reference", ["absolute", "dotdot", "link"])
def test_rows_may_not_name_images_outside_the_data_sets_folder(tmp_path: Path, reference: str) -> None:
    """A data set file could otherwise make a run read any file and send it to the endpoint."""
    outside = FIXTURES / "VERITE/images/true_0.jpg"
    folder = tmp_path / "set"
    folder.mkdir()
    named = {"absolute": str(outside), "dotdot": os.path.relpath(outside, folder), "link": "inner.jpg"}[reference]
    if reference == "link":
        (folder / "inner.jpg").symlink_to(outside)
    path = folder / "posts.jsonl"
    path.write_text(json.dumps({"post": "x", "pics": [named]}) + "\n")
    with pytest.raises(InputError, match="outside the data set's image folder") as caught:
        load_dataset(f"jsonl:{path}", {"text": "post", "images": "pics"})
    assert caught.value.field == "posts.jsonl:1.pics"
    allowed = load_dataset(f"jsonl:{path}", {"text": "post", "images": "pics", "images_outside_root": "true"})
    assert allowed.samples[0].images[0].resolve() == outside.resolve()


@pytest.mark.parametrize("content, words", [
    ("\ufeff".encode("utf-16") + b"", "UTF-16"),
    ("{\"post\": \"caf\xe9\"}\n".encode("latin-1"), "not UTF-8"),
    (b"[" * 50_000 + b"]" * 50_000, "nested"),
    (b'{"post": ' + b"[" * 500 + b"]" * 500 + b"}\n", "nested"),
    (b'{"post": ["a", "b"]}\n', "is a list, not text"),
    (b'{"post": true}\n', "is a bool, not text"),
])
def test_unreadable_data_set_files_name_the_file_and_row(tmp_path: Path, content: bytes, words: str) -> None:
    path = tmp_path / "posts.jsonl"
    path.write_bytes(content)
    with pytest.raises(InputError, match=words) as caught:
        load_dataset(f"jsonl:{path}", {"text": "post"})
    assert "posts.jsonl" in str(caught.value)


def test_an_oversized_csv_field_names_its_line(tmp_path: Path) -> None:
    path = tmp_path / "posts.csv"
    path.write_text("text,label\nfine,real\n\"" + "x" * (2 << 20) + "\",real\n")
    with pytest.raises(InputError, match=r"posts.csv:3.*longer than") as caught:
        load_dataset(f"csv:{path}", {"text": "text", "label": "label"})
    assert caught.value.field.startswith("posts.csv:")
