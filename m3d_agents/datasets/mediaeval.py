"""MediaEval 2016 "Verifying Multimedia Use": ``posts.txt`` plus ``images/<event>/...``.

``posts.txt`` is tab-separated with a header: ``post_id, post_text, user_id, image_id(s),
username, timestamp, label``. Tweet text contains quote characters, so the file is read without
CSV quoting. ``image_id(s)`` is a comma-separated list joined to image files by file name without
extension, anywhere under ``images/`` (events keep them in ``fakes``/``reals`` or directly).

Choices, each counted in the load report:

* an image id with no file (the release has videos and a few removed images) is dropped from its
  post; a post left with no image is skipped;
* ``one_post_per_image``: each image is used by at most one post, the first in file order that
  still has a free image, and that sample carries that one image. Hundreds of retweets of one
  picture otherwise dominate the score; one post per image gives a balanced set;
* ``language`` (e.g. ``en`` or ``en,es``): keeps posts whose text py3langid identifies as one of
  these languages, after stripping URLs, mentions and hashtag signs;
* the task treats the ``humor`` label of some releases as fake.
"""

from __future__ import annotations

import csv
from datetime import datetime
from pathlib import Path

from m3d_agents.datasets.base import dataset, LoadedDataset, LoaderOptions, Skips, make_sample, map_label, read_csv_rows
from m3d_agents.language import LanguageFilter
from m3d_agents.errors import InputError
from m3d_agents.sample import SampleMetadata

TAXONOMY = "binary"
LABELS: dict[str, str | None] = {"fake": "fake", "real": "real", "humor": "fake"}
COLUMNS = ("post_id", "post_text", "image_id(s)", "label")


class Options(LoaderOptions):
    images_dir: Path | None = None
    one_post_per_image: bool = False
    language: str | None = None


def posts_file(path: Path) -> Path:
    return path / "posts.txt" if path.is_dir() else path


def image_index(folder: Path) -> dict[str, Path]:
    if not folder.is_dir():
        raise InputError("dataset", f"image folder {folder} does not exist")
    index: dict[str, Path] = {}
    for file in sorted(folder.rglob("*")):
        if file.is_file() and file.suffix.lower() in {".jpg", ".jpeg", ".png", ".gif", ".webp", ".bmp"}:
            index.setdefault(file.stem, file)
    return index


def _timestamp(value: str) -> datetime | None:
    try:
        return datetime.strptime(value.strip(), "%a %b %d %H:%M:%S %z %Y")
    except ValueError:
        return None


@dataset("mediaeval", "MediaEval 2016 posts.txt (folder or file) with images/", Options)
def load(path: Path, options: Options) -> LoadedDataset:
    posts = posts_file(path)
    images = image_index(options.images_dir or posts.parent / "images")
    languages = LanguageFilter(options.language)
    skips = Skips()
    taken: set[str] = set()
    samples = []
    for row in read_csv_rows(posts, delimiter="\t", quoting=csv.QUOTE_NONE):
        for column in COLUMNS:
            row.require(column)
        label = map_label(row, "label", row.data["label"], LABELS, skips)
        if label is None:
            continue
        text = row.text("post_text")
        keep, language = languages.check(text, skips)
        if not keep:
            continue
        ids = [i.strip() for i in row.text("image_id(s)").split(",") if i.strip()]
        present = [i for i in ids if i in images]
        if not present:
            skips.add("no image file for any of its image ids")
            continue
        if options.one_post_per_image:
            free = [i for i in present if i not in taken]
            if not free:
                skips.add("its images are used by earlier posts (one_post_per_image)")
                continue
            present = free[:1]
            taken.add(free[0])
        when = _timestamp(row.text("timestamp", ""))
        username = row.text("username", "").strip()
        url = f"https://twitter.com/{username}/status/{row.data['post_id']}" if username else None
        sample = make_sample(
            row, skips, id=str(row.data["post_id"]).strip(), text=text, images=[images[i] for i in present],
            gold_label=label, taxonomy=TAXONOMY,
            metadata=SampleMetadata(claim_date=when.date() if when else None, language=language, source_url=url),
        )
        if sample is not None:
            samples.append(sample)
    return LoadedDataset.build("mediaeval", path, options, samples, skips, TAXONOMY)
