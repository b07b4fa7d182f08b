"""What a run's figures, or a comparison of runs, cannot say: one class only, too few samples, runs
left unfinished or of unequal size.

A first evaluation is usually small (``--limit 4``), and small runs fail silently: ten fakes out of
ten give a weighted precision of 1.000 and a real-class support of 0; four posts give a 95%
interval on a difference that spans most of [-1, 1]; an interrupted run compared with a finished one
is compared on the samples both have. Time misleads too: a run answered from the response cache
took no model's time, and one that sent more calls at once than its backend answers spent most of
its time waiting for a slot. Each caveat is one sentence that says what is wrong and what
the figures then mean, printed by ``m3d report``, ``m3d evaluate`` and ``m3d compare`` and written
into ``report.md`` and ``comparison.md``.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Literal, Sequence

from pydantic import BaseModel

from debates.eval.records import EvalRow, RunManifest

CaveatKind = Literal["one_class", "small", "unfinished", "running", "unequal", "cached", "waiting"]

SMALL_N = 30
"""Below this many scored samples an interval on accuracy is wider than about ±0.18 (at accuracy 0.5)."""

WAITING_SHARE = 0.5
"""A run whose calls waited for a backend slot for at least this share of its wall time per sample is said to."""


class Caveat(BaseModel):
    kind: CaveatKind
    text: str


def half_width(n: int) -> float:
    """The half-width of a 95% interval on a proportion near 0.5 measured on ``n`` samples (normal approximation)."""
    return 1.96 * math.sqrt(0.25 / n) if n else 1.0


def planned_samples(manifest: RunManifest) -> int | None:
    """How many samples the run was asked for, when its manifest says."""
    if manifest.load_report is None:
        return None
    loaded = manifest.load_report.loaded
    limit = manifest.subset.limit if manifest.subset is not None else None
    return min(loaded, limit) if limit else loaded


def run_caveats(manifest: RunManifest, rows: Sequence[EvalRow], running: str | None = None) -> list[Caveat]:
    """What this run's figures cannot say; ``running`` is the pid of another process writing the run now."""
    caveats = []
    planned = planned_samples(manifest)
    if planned is not None and len(rows) < planned and running is not None:
        caveats.append(Caveat(kind="running", text=(
            f"running: {len(rows)} of the {planned} samples asked for are done so far (m3d evaluate, pid {running}, "
            "is still writing this run); every figure is over the finished ones only; run m3d report again once it ends")))
    elif planned is not None and len(rows) < planned:
        caveats.append(Caveat(kind="unfinished", text=(
            f"unfinished: {len(rows)} of the {planned} samples asked for are done (an interrupted run; the same command "
            "resumes it); every figure is over the finished ones only")))
    scored = [r for r in rows if r.scored]
    golds = Counter(str(r.gold) for r in scored)
    labels = sorted(manifest.load_report.labels) if manifest.load_report is not None else []
    if len(golds) == 1 and len(scored) > 1:
        (only, _), = golds.items()
        missing = [label for label in labels if label != only]
        caveats.append(Caveat(kind="one_class", text=(
            f"one class only: every scored sample is {only}" + (f" (none is {', '.join(missing)})" if missing else "")
            + f"; accuracy is just the share answered {only}, the other classes' precision, recall and F1 cannot be "
            "measured, and weighted figures describe one class; choose samples with --sample balanced")))
    if 0 < len(scored) < SMALL_N:
        caveats.append(Caveat(kind="small", text=(
            f"small: {len(scored)} scored sample(s); a 95% interval on accuracy is about ±{half_width(len(scored)):.2f} "
            "wide here, so these figures show that the run works, not how well the configuration does")))
    return caveats + time_caveats("", rows)


def time_caveats(name: str, rows: Sequence[EvalRow]) -> list[Caveat]:
    """What the run's latency does not measure: samples answered from the cache, time spent waiting for a slot.
    ``name`` starts each sentence in a comparison (``"B: "``)."""
    finished = [r for r in rows if r.status != "error"]
    timed = [r for r in finished if not r.from_cache]
    caveats = []
    if len(timed) < len(finished):
        cached = len(finished) - len(timed)
        over = (f"the latency is over the {len(timed)} that called a model" if timed
                else "so there is no latency to report: no model was timed")
        caveats.append(Caveat(kind="cached", text=(
            f"{name}from the cache: {cached} of {len(finished)} finished samples were answered wholly from the response "
            f"cache (their calls asked no model, so their time is not a model's); {over}")))
    waits = [r.wait_s for r in timed if r.wait_s is not None]
    walls = [r.latency_s for r in timed if r.wait_s is not None]
    if waits and sum(walls) > 0 and sum(waits) / sum(walls) >= WAITING_SHARE:
        caveats.append(Caveat(kind="waiting", text=(
            f"{name}waiting: a sample's calls waited {sum(waits) / len(waits):.1f} s on average for a backend slot, "
            f"against {sum(walls) / len(walls):.1f} s of wall time per sample: more calls were sent at once than the "
            "backend answers (the embedded model answers one at a time; see --concurrency), so the latency measures "
            "the queue as much as the model; 'model / waiting s' splits the two")))
    return caveats


def comparison_caveats(names: Sequence[str], runs: Sequence[tuple[RunManifest, Sequence[EvalRow]]], paired: int) -> list[Caveat]:
    """What a comparison of these runs on their ``paired`` common samples cannot say."""
    caveats = []
    for name, (manifest, rows) in zip(names, runs):
        planned = planned_samples(manifest)
        if planned is not None and len(rows) < planned:
            caveats.append(Caveat(kind="unfinished", text=(
                f"{name} is unfinished ({len(rows)} of {planned} samples): it is compared on the samples it finished")))
    sizes = {name: sum(1 for r in rows if r.scored) for name, (_, rows) in zip(names, runs)}
    if len(set(sizes.values())) > 1 or any(size != paired for size in sizes.values()):
        listed = ", ".join(f"{name} {size}" for name, size in sizes.items())
        caveats.append(Caveat(kind="unequal", text=(
            f"unequal runs: scored samples {listed}; the differences are measured on the {paired} samples every run "
            "scored, while each run's own row uses all of its own")))
    common = set.intersection(*({r.sample_id for r in rows if r.scored} for _, rows in runs)) if runs else set()
    golds = {str(r.gold) for _, rows in runs[:1] for r in rows if r.sample_id in common}
    if len(golds) == 1 and paired > 1:
        caveats.append(Caveat(kind="one_class", text=(
            f"one class only: every paired sample is {golds.pop()}, so a difference in accuracy is a difference in how "
            "often each run gives that one answer; choose samples with --sample balanced")))
    for name, (_, rows) in zip(names, runs):
        caveats.extend(time_caveats(f"{name}: ", rows))
    if 0 < paired < SMALL_N:
        caveats.append(Caveat(kind="small", text=(
            f"small: {paired} paired sample(s); the bootstrap interval says how far the difference could move if these "
            f"{paired} posts were drawn again, and with so few it can take only a few values and may span up to about "
            f"±{min(1.0, 2 * half_width(paired)):.2f}; an interval that includes 0 (an end at exactly 0 counts) shows no difference, not an equal one")))
    return caveats
