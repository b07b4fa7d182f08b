"""Score article extraction on the article-extraction benchmark with the benchmark's own metric, and
measure what parsing pages in isolated worker processes costs.

    python benchmarks/extraction.py                 # the product's extractor, isolated, against in-process
    python benchmarks/extraction.py --compare       # also newspaper3k alone and trafilatura alone

The product reads every page in a worker of the parser pool (:mod:`m3d_agents.isolation`), so the
F1 printed is of the texts those workers returned. The same pages are also read here, in this
process, one after the other (what one process can do safely: lxml is not safe from several
threads), and the script prints both rates and their ratio:

    pages per second in-process: X
    pages per second isolated: Y          (two workers, every page asked for at once)
    isolated / in-process: R

The two are measured in alternating rounds (``--rounds``, on a pool already started and warm) and
each rate is its best round's, as ``timeit`` reports: on a machine other programs share, the best
round is the one least slowed by them, and alternating gives both ways the same chances.

The metric, as the benchmark defines it: text is split into ``\\w+`` tokens (Unicode), 4-token
shingles are counted, each page's TP/FP/FN counts are normalised to sum to 1, precision and recall
are averaged over the pages (a page with no predicted shingle counts for recall only, one with no
true shingle for precision only), and F1 is computed from the two means.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import re
import statistics
import sys
import time
from collections import Counter
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


def _compare(html: str, url: str | None) -> dict[str, str]:
    """newspaper3k alone and trafilatura alone, in this process (a quality comparison, not the product's path)."""
    from retrieval.extract import _safe, newspaper_article

    return {
        "newspaper3k": _safe(lambda: newspaper_article(html, url).text, ""),
        "trafilatura": _safe(lambda: __import__("trafilatura").extract(html, url=url) or "", ""),
    }


def in_process(jobs: list[tuple[str, str, str | None]]) -> tuple[dict[str, str], float]:
    """Every page read here, one after the other: the texts and the seconds it took."""
    from retrieval.extract import extract_article

    started = time.perf_counter()
    texts = {key: extract_article(html, url).text for key, html, url in jobs}
    return texts, time.perf_counter() - started


async def isolated(jobs: list[tuple[str, str, str | None]]) -> tuple[dict[str, str], float]:
    """Every page read by the current parser pool, all asked for at once: the texts and the seconds it took."""
    from retrieval.extract import extract_page

    started = time.perf_counter()
    pages = await asyncio.gather(*(extract_page(html, url) for _key, html, url in jobs))
    return {key: page.text for (key, _html, _url), page in zip(jobs, pages)}, time.perf_counter() - started


def measured(
    jobs: list[tuple[str, str, str | None]], workers: int, rounds: int
) -> tuple[dict[str, str], dict[str, str], float, float, float]:
    """The texts read isolated and in-process, the best round's seconds of each, and the pool's start-up seconds."""
    from m3d_agents.isolation import IsolationSettings, ParserPool, using
    from retrieval.extract import extract_article, extract_page

    pool = ParserPool(IsolationSettings(workers=workers, timeout_s=120, items_per_worker=1000))
    apart_times: list[float] = []
    here_times: list[float] = []

    async def alternate() -> tuple[dict[str, str], dict[str, str], float]:
        started = time.perf_counter()
        # each worker's first page loads the libraries' data (as the line below does here): not part of the rates
        await asyncio.gather(*(extract_page(html, url) for _key, html, url in jobs[: 2 * workers]))
        startup = time.perf_counter() - started
        extract_article(jobs[0][1], jobs[0][2])
        apart: dict[str, str] = {}
        here: dict[str, str] = {}
        for _round in range(rounds):
            apart, seconds = await isolated(jobs)
            apart_times.append(seconds)
            here, seconds = in_process(jobs)
            here_times.append(seconds)
        return apart, here, startup

    try:
        with using(pool):
            apart, here, startup = asyncio.run(alternate())
    finally:
        pool.close()
    return apart, here, min(apart_times), min(here_times), startup


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--compare", action="store_true", help="also score newspaper3k and trafilatura alone")
    parser.add_argument("--workers", type=int, default=2, help="worker processes of the parser pool (default 2)")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of each way; its best counts (default 3)")
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
    apart, here, apart_s, here_s, startup_s = measured(jobs, args.workers, max(1, args.rounds))
    results: dict[str, dict[str, str]] = {"pipeline": apart}
    if args.compare:
        compared = [_compare(html, url) for _key, html, url in jobs]
        for name in ("newspaper3k", "trafilatura"):
            results[name] = {key: found[name] for (key, _html, _url), found in zip(jobs, compared)}
    print(f"{len(jobs)} pages from {args.data}")
    for name, texts in results.items():
        figures = score([(truth[k].get("articleBody", ""), texts[k]) for k in truth])
        print(f"{name:<12} F1={figures['f1']:.4f}  precision={figures['precision']:.4f}  recall={figures['recall']:.4f}")
    same = sum(1 for key in apart if apart[key] == here[key])
    print(f"texts read isolated and in-process alike: {same} of {len(jobs)}")
    print(f"parser pool start-up s: {startup_s:.2f}")
    print(f"rounds: {max(1, args.rounds)}, alternating; each rate is its best round's")
    in_rate, apart_rate = len(jobs) / here_s, len(jobs) / apart_s
    print(f"pages per second in-process: {in_rate:.2f}")
    print(f"pages per second isolated: {apart_rate:.2f}")
    print(f"isolated / in-process: {apart_rate / in_rate:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
