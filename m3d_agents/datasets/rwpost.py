"""RW-Post, the data set of AgentFact: JSON Lines, one fact-checked post per line.

The recommended model input is the ``claim``, the post text
(``steps_in_groundtruth_generated.Post.text``) and the post images
(``steps_in_groundtruth_generated.Post.image_address``, paths relative to the repository root).
``label`` is a fact-check rating (``TRUE``, ``FALSE``, ``UNPROVEN``, ...). ``claim_time`` becomes
the claim date, so retrieval can stop before it. The fact-check article (``news_url``) and its
evidence are never put into the sample: they contain the answer.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path

from m3d_agents.datasets.base import dataset, ImageResolver, LoadedDataset, LoaderOptions, Skips, make_sample, map_label, read_records
from m3d_agents.errors import InputError
from m3d_agents.sample import SampleMetadata

TAXONOMY = "factcheck"
LABELS: dict[str, str | None] = {
    "true": "true", "false": "false", "unproven": "unproven", "mixture": "mixture", "outdated": "outdated",
}


class Options(LoaderOptions):
    image_root: Path | None = None
    with_images: bool = True


def _repo_root(path: Path) -> Path:
    """RW-Post image addresses start at the repository root (``Dataset_RW-Post/...``)."""
    for parent in path.parents:
        if (parent / "Dataset_RW-Post").is_dir():
            return parent
    return path.parent


@dataset("rwpost", "RW-Post (AgentFact) JSON Lines, fact-check ratings", Options)
@dataset("agentfact", "alias of rwpost", Options)
def load(path: Path, options: Options) -> LoadedDataset:
    skips = Skips()
    images = ImageResolver(options.image_root or _repo_root(path), options.missing_images, skips)
    samples = []
    for index, row in enumerate(read_records(path)):
        label = map_label(row, "label", row.require("label"), LABELS, skips)
        if label is None:
            continue
        post = (row.data.get("steps_in_groundtruth_generated") or {}).get("Post") or {}
        claim = row.text("claim")
        post_text = str(post.get("text") or "")
        text = claim if not post_text or post_text.strip() == claim.strip() else f"Claim: {claim}\nPost: {post_text}"
        addresses = (post.get("image_address") or []) if options.with_images else []
        paths = images.resolve_all([str(a) for a in (addresses if isinstance(addresses, list) else [addresses])], row,
                                   "steps_in_groundtruth_generated.Post.image_address")
        if paths is None:
            continue
        claim_date = None
        if row.data.get("claim_time"):
            try:
                claim_date = date.fromisoformat(str(row.data["claim_time"])[:10])
            except ValueError as exc:
                raise InputError(row.field("claim_time"), f"not a YYYY-MM-DD date: {row.data['claim_time']!r}") from exc
        sample = make_sample(
            row, skips, id=f"rwpost-{index}", text=text, images=paths, gold_label=label, taxonomy=TAXONOMY,
            metadata=SampleMetadata(claim_date=claim_date, language="en"),
        )
        if sample is not None:
            samples.append(sample)
    return LoadedDataset.build("rwpost", path, options, samples, skips, TAXONOMY)
