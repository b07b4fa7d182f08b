"""Score article extraction on the article-extraction benchmark with the benchmark's own metric.

    python benchmarks/extraction.py                 # the product's extractor (retrieval.extract)
    python benchmarks/extraction.py --compare       # also newspaper3k alone and trafilatura alone

The metric, as the benchmark defines it: text is split into ``\\w+`` tokens (Unicode), 4-token
shingles are counted, each page's TP/FP/FN counts are normalised to sum to 1, precision and recall
are averaged over the pages (a page with no predicted shingle counts for recall only, one with no
true shingle for precision only), and F1 is computed from the two means.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import statistics
import sys
import time
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

DATA = REPO.parent / "shared" / "data" / "article-extraction-benchmark"
TOKEN = re.compile(r"\w+", re.UNICODE)
Counts = tuple[float, float, float]


def shingles(text: str, n: int = 4) -> Counter[tuple[str, ...]]:
    tokens = TOKEN.findall(text or "")
    return Counter(tuple(tokens[i : i + n]) for i in range(max(1, len(tokens) - n + 1)) if tokens[i : i + n])


def page_counts(true: str, predicted: str) -> Counts:
    """TP/FP/FN over shingles of one page, normalised to sum to 1 so every page weighs the same."""
    expected, found = shingles(true), shingles(predicted)
    tp = fp = fn = 0.0
    for key in expected.keys() | found.keys():
        a, b = expected.get(key, 0), found.get(key, 0)
        tp += min(a, b)
        fp += max(0, b - a)
        fn += max(0, a - b)
    total = tp + fp + fn
    return (tp / total, fp / total, fn / total) if total else (tp, fp, fn)


def page_precision(tp: float, fp: float, fn: float) -> float:
    if fp == fn == 0:
        return 1.0
    return 0.0 if tp == fp == 0 else tp / (tp + fp)


def page_recall(tp: float, fp: float, fn: float) -> float:
    if fp == fn == 0:
        return 1.0
    return 0.0 if tp == fn == 0 else tp / (tp + fn)


def score(pairs: list[tuple[str, str]]) -> dict[str, float]:
    """``pairs`` of (ground truth, prediction) -> f1, precision, recall."""
    counts = [page_counts(true, predicted) for true, predicted in pairs]
    precision = statistics.mean(page_precision(*c) for c in counts if c[0] + c[1] > 0)
    recall = statistics.mean(page_recall(*c) for c in counts if c[0] + c[2] > 0)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"f1": f1, "precision": precision, "recall": recall}


def _page(args: tuple[str, str, str]) -> tuple[str, dict[str, str]]:
    key, html, url = args
    from retrieval.extract import _safe, extract_body, newspaper_article

    out = {"pipeline": extract_body(html, url)[0]}
    if os.environ.get("M3D_BENCH_COMPARE") == "1":
        out["newspaper3k"] = _safe(lambda: newspaper_article(html, url).text, "")
        out["trafilatura"] = _safe(lambda: __import__("trafilatura").extract(html, url=url) or "", "")
    return key, out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--compare", action="store_true", help="also score newspaper3k and trafilatura alone")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    args = parser.parse_args()
    truth_file = args.data / "ground-truth.json"
    if not truth_file.is_file():
        print(f"error: the benchmark data is not at {args.data}", file=sys.stderr)
        return 2
    truth = json.loads(truth_file.read_text(encoding="utf-8"))
    jobs = []
    for key, item in truth.items():
        raw = gzip.decompress((args.data / "html" / f"{key}.html.gz").read_bytes())
        jobs.append((key, raw.decode("utf-8", errors="replace"), item.get("url")))
    if args.compare:
        os.environ["M3D_BENCH_COMPARE"] = "1"
    started = time.perf_counter()
    with ProcessPoolExecutor(max_workers=args.workers) as pool:
        results = dict(pool.map(_page, jobs, chunksize=4))
    elapsed = time.perf_counter() - started
    print(f"{len(jobs)} pages from {args.data} in {elapsed:.1f}s with {args.workers} workers")
    for name in results[next(iter(results))]:
        figures = score([(truth[k].get("articleBody", ""), results[k][name]) for k in truth])
        print(f"{name:<12} F1={figures['f1']:.4f}  precision={figures['precision']:.4f}  recall={figures['recall']:.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
