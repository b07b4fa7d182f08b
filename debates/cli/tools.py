"""``m3d select-tools``: greedy tool selection on a development subset, and ``m3d tools``: the cards."""

from __future__ import annotations

import csv
import random
import sys
from pathlib import Path
from typing import Optional

import typer

from debates.cli.common import console, fail
from m3d_agents.errors import InputError
from m3d_agents.media.images import load_image
from m3d_agents.tools.forensics.base import ForensicResult
from m3d_agents.tools.forensics.fusion import FORENSIC_TOOLS, fuse, run_forensics
from m3d_agents.tools.greedy_selection import SelectionStep, greedy_select

EVALUABLE_CONFIGS = ("forensic-fusion",)


def mediaeval_images(folder: Path) -> list[tuple[Path, bool]]:
    """Labelled images of a MediaEval 2016 folder: ``posts.txt`` labels joined to ``images/**/<image_id>.*``."""
    posts = folder / "posts.txt"
    if not posts.is_file():
        raise InputError("dataset", f"{posts} does not exist; expected a MediaEval 2016 folder with posts.txt and images/")
    files = {p.stem: p for p in sorted((folder / "images").rglob("*")) if p.is_file() and p.suffix.lower() != ".txt"}
    labels: dict[str, bool] = {}
    csv.field_size_limit(sys.maxsize)
    with posts.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE):
            label = (row.get("label") or "").strip().lower()
            if label not in {"fake", "real"}:
                continue
            for image_id in (row.get("image_id(s)") or "").split(","):
                image_id = image_id.strip()
                if image_id in files and image_id not in labels:
                    labels[image_id] = label == "fake"
    return [(files[i], labels[i]) for i in sorted(labels)]


def balanced_subset(items: list[tuple[Path, bool]], limit: int, seed: int) -> list[tuple[Path, bool]]:
    """Up to ``limit`` items, half fake and half real where the data allow, drawn with ``seed``."""
    rng = random.Random(seed)
    fakes = [i for i in items if i[1]]
    reals = [i for i in items if not i[1]]
    rng.shuffle(fakes)
    rng.shuffle(reals)
    take_reals = min(len(reals), limit // 2)
    take_fakes = min(len(fakes), limit - take_reals)
    take_reals = min(len(reals), limit - take_fakes)
    return fakes[:take_fakes] + reals[:take_reals]


def parse_dataset(spec: str) -> Path:
    kind, _, path = spec.partition(":")
    if kind != "mediaeval" or not path:
        raise InputError("dataset", f"{spec!r} is not supported; use mediaeval:PATH (a MediaEval 2016 folder)")
    return Path(path)


def select_tools(
    config: str = typer.Option("forensic-fusion", "--config", help="What is evaluated; see below."),
    dataset: str = typer.Option(..., "--dataset", help="mediaeval:PATH, a folder with posts.txt and images/."),
    limit: int = typer.Option(100, "--limit", min=2, help="Images in the development subset (balanced fake/real)."),
    base: list[str] = typer.Option(["ela"], "--base", help="Starting tool set; repeat for several."),
    candidate: list[str] = typer.Option([], "--candidate", help="Tools to try, in order (default: all others)."),
    threshold: float = typer.Option(0.5, "--threshold", min=0.0, max=1.0),
    seed: int = typer.Option(0, "--seed", help="Seed of the balanced subset draw."),
) -> None:
    """Greedy tool selection (T2Agent): add each candidate tool in turn and keep it if dev accuracy rises.

    What is evaluated: with --config forensic-fusion (the only configuration this command can
    evaluate so far), the classifier is the fused forgery score of the chosen forensic tools,
    called fake when it reaches --threshold; accuracy is measured against the MediaEval labels.
    No model is called. Tools: ela, jpeg, exif, noise.
    """
    if config not in EVALUABLE_CONFIGS:
        fail(f"config: {config!r} cannot be evaluated by select-tools yet; available: {', '.join(EVALUABLE_CONFIGS)}")
    candidates = candidate or [name for name in FORENSIC_TOOLS if name not in base]
    unknown = [n for n in [*base, *candidates] if n not in FORENSIC_TOOLS]
    if unknown:
        fail(f"tools: unknown tool(s) {', '.join(unknown)}; known: {', '.join(FORENSIC_TOOLS)}")
    try:
        items = balanced_subset(mediaeval_images(parse_dataset(dataset)), limit, seed)
    except InputError as exc:
        fail(str(exc))
    results: list[tuple[dict[str, ForensicResult], bool]] = []
    skipped = 0
    with console.status(f"running the forensic tools on {len(items)} images"):
        for path, fake in items:
            try:
                results.append((run_forensics(load_image(path)), fake))
            except InputError as exc:
                skipped += 1
                console.print(f"[yellow]skipped[/] {exc}")
    if not results:
        fail("dataset: no readable image in the development subset")
    fakes = sum(1 for _, fake in results if fake)
    console.print(f"development subset: {len(results)} images ({fakes} fake, {len(results) - fakes} real), {skipped} skipped")

    def evaluate(tools: tuple[str, ...]) -> float:
        correct = sum((fuse([r[t] for t in tools]).score >= threshold) == fake for r, fake in results)
        return correct / len(results)

    def show(step: SelectionStep) -> None:
        mark = "[green]kept[/]" if step.kept else "[dim]dropped[/]"
        console.print(f"+ {step.tool:<6} -> {{{', '.join(step.tools)}}}: accuracy {step.accuracy:.3f} {mark}")

    try:
        console.print(f"base {{{', '.join(base)}}}: accuracy {evaluate(tuple(base)):.3f}")
        outcome = greedy_select(base, candidates, evaluate, on_step=show)
    except InputError as exc:
        fail(str(exc))
    console.print(f"chosen: {{{', '.join(outcome.chosen)}}} with accuracy {outcome.accuracy:.3f}")


def list_tools(name: Optional[str] = typer.Argument(None, help="Show one tool's full card.")) -> None:
    """List the tools the agents can call, with their cards."""
    from m3d_agents.tools import default_registry

    registry = default_registry()
    try:
        cards = [registry.card(name)] if name else registry.cards()
    except InputError as exc:
        fail(str(exc))
    for card in cards:
        console.print(f"[bold]{card.name}[/] ({card.category}, {card.cost}): {card.description()}")
