"""Baseline AUCs of the forensic tools and their fusion on the shared data.

- pixel level: each tool's heat map against the tampering masks of ../shared/data/casia2-samples
  (AUC per image, then the mean over images);
- image level: each tool's score, fake against real, on ../shared/data/mediaeval2016-dev
  (labels from posts.txt, one per image);
- what isolation costs: the tools on MediaEval images in this process, one after the other, and in
  the parser pool's two workers (every image asked for at once), where the product runs them;
  printed as ``images per second in-process: X``, ``images per second isolated: Y`` and
  ``images per second isolated / in-process: R``.

Run: python benchmarks/forensics.py [--limit N] [--speed-images N]
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from PIL import Image
from scipy.stats import rankdata

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from debates.cli.tools import mediaeval_images  # noqa: E402
from m3d_agents.errors import InputError  # noqa: E402
from m3d_agents.media.images import load_image  # noqa: E402
from m3d_agents.sample import InputLimits  # noqa: E402
from m3d_agents.isolation import IsolationSettings, ParserPool, using  # noqa: E402
from m3d_agents.media.images import PreparedImage  # noqa: E402
from m3d_agents.tools.forensics import base  # noqa: E402
from m3d_agents.tools.forensics.fusion import FORENSIC_TOOLS, forensics_here, fuse, run_forensics  # noqa: E402

DATA = REPO.parent / "shared" / "data"
METHODS = [*FORENSIC_TOOLS, "fusion"]
LIMITS = InputLimits(max_image_bytes=60 * 1024 * 1024)


def roc_auc(labels: np.ndarray, scores: np.ndarray) -> float:
    """Area under the ROC curve via the rank-sum (Mann-Whitney) identity; ties count half."""
    labels = np.asarray(labels, dtype=bool)
    positives, negatives = int(labels.sum()), int((~labels).sum())
    if positives == 0 or negatives == 0:
        return float("nan")
    ranks = rankdata(np.asarray(scores, dtype=np.float64))
    return float((ranks[labels].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def all_results(path: Path) -> dict[str, object]:
    results = run_forensics(load_image(path, LIMITS), maps=True)
    return {**results, "fusion": fuse(list(results.values()))}


def pixel_level() -> dict[str, list[float]]:
    folder = DATA / "casia2-samples"
    aucs: dict[str, list[float]] = {m: [] for m in METHODS}
    for mask_path in sorted(folder.glob("*_gt.png")):
        stem = mask_path.name[: -len("_gt.png")]
        image_path = next(p for p in folder.glob(stem + ".*") if p != mask_path)
        mask = np.asarray(Image.open(mask_path).convert("L")) > 127
        for method, result in all_results(image_path).items():
            heatmap = result.heatmap  # type: ignore[attr-defined]
            if heatmap is None or heatmap.shape != mask.shape:
                continue
            aucs[method].append(roc_auc(mask.ravel(), heatmap.ravel()))
    return aucs


def image_level(limit: int | None) -> tuple[dict[str, float], int, int, int]:
    labelled = mediaeval_images(f"mediaeval:{DATA / 'mediaeval2016-dev'}")
    if limit:
        labelled = labelled[:: max(1, len(labelled) // limit)][:limit]
    scores: dict[str, list[float]] = {m: [] for m in METHODS}
    labels: list[bool] = []
    skipped = 0
    for path, fake in labelled:
        try:
            results = all_results(path)
        except InputError:
            skipped += 1
            continue
        labels.append(fake)
        for method, result in results.items():
            scores[method].append(result.score)  # type: ignore[attr-defined]
    label_array = np.asarray(labels)
    return ({m: roc_auc(label_array, np.asarray(s)) for m, s in scores.items()}, int(label_array.sum()),
            int((~label_array).sum()), skipped)


def speed(count: int, workers: int, rounds: int) -> tuple[float, float, float]:
    """Images per second in this process and in a parser pool of ``workers``, on ``count`` MediaEval images,
    and the pool's start-up seconds. Both read each image's file afresh (no cached pixels), after a warm-up
    on images outside the timed ones. The two ways are measured in alternating rounds and each rate is its
    best round's (as ``timeit`` reports): on a shared machine, the round least slowed by other programs."""
    images: list[PreparedImage] = []
    for path, _fake in mediaeval_images(f"mediaeval:{DATA / 'mediaeval2016-dev'}"):
        try:
            images.append(load_image(path, LIMITS))
        except InputError:
            continue
        if len(images) == count + workers:
            break
    warm, images = images[count:], images[:count]
    names = list(FORENSIC_TOOLS)
    pool = ParserPool(IsolationSettings(workers=workers, analysis_timeout_s=600, items_per_worker=1000))
    apart_times: list[float] = []
    here_times: list[float] = []
    try:
        with using(pool), ThreadPoolExecutor(max_workers=2 * workers) as callers:
            started = time.perf_counter()
            list(callers.map(lambda image: run_forensics(image, names), warm))
            startup = time.perf_counter() - started
            forensics_here(warm[0].ref(), names, False)
            base._pixels.clear()
            for _round in range(rounds):
                started = time.perf_counter()
                list(callers.map(lambda image: run_forensics(image, names), images))
                apart_times.append(time.perf_counter() - started)
                started = time.perf_counter()
                for image in images:
                    forensics_here(image.ref(), names, False)
                    base._pixels.clear()
                here_times.append(time.perf_counter() - started)
    finally:
        pool.close()
    return len(images) / min(here_times), len(images) / min(apart_times), startup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=None, help="use about this many MediaEval images")
    parser.add_argument("--speed-images", type=int, default=60, help="MediaEval images the speed figures are measured on")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of the parser pool (default 2)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of each way; its best counts (default 3)")
    args = parser.parse_args()
    if not DATA.exists():
        sys.exit(f"needs the shared data set at {DATA}")
    here, apart, startup = speed(args.speed_images, args.workers, max(1, args.rounds))
    started = time.perf_counter()
    pixel = pixel_level()
    images, fakes, reals, skipped = image_level(args.limit)
    count = max(len(v) for v in pixel.values())
    print(f"pixel-level AUC: casia2-samples, {count} tampered images (mean of per-image AUCs)")
    print(f"image-level AUC: mediaeval2016-dev, {fakes} fake vs {reals} real images ({skipped} unreadable skipped)")
    print()
    print(f"{'method':<10} {'pixel AUC':>10} {'image AUC':>10}")
    for method in METHODS:
        values = pixel[method]
        pixel_auc = f"{np.mean(values):.3f}" if values else "n/a"
        print(f"{method:<10} {pixel_auc:>10} {images[method]:>10.3f}")
    print(f"\n{time.perf_counter() - started:.1f} s")
    print(f"\nparser pool start-up s: {startup:.2f}")
    print(f"rounds: {max(1, args.rounds)}, alternating; each rate is its best round's")
    print(f"images per second in-process: {here:.2f}")
    print(f"images per second isolated: {apart:.2f}")
    print(f"images per second isolated / in-process: {apart / here:.2f}")


if __name__ == "__main__":
    main()
