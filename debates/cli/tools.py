"""``m3d select-tools``: greedy tool selection on a development subset, and ``m3d tools``: the cards."""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from debates.cli.common import console, evidence_store_option, fail, run_cli
from m3d_agents.config_types import SEED_MAX
from m3d_agents.errors import InputError
from m3d_agents.tools.greedy_selection import SelectionStep, greedy_select

if TYPE_CHECKING:
    from m3d_agents.tools.forensics.base import ForensicResult

EVALUABLE_CONFIGS = ("forensic-fusion",)


def mediaeval_images(spec: str) -> list[tuple[Path, bool]]:
    """Labelled images of a MediaEval 2016 data set (``mediaeval:PATH``), read by the data set's loader:
    each image once, with the label of the first post that shows it (``True``: fake)."""
    from m3d_agents.datasets import load_dataset, parse_spec

    kind, _ = parse_spec(spec)
    if kind != "mediaeval":
        raise InputError("dataset", f"{spec!r} is not supported; use mediaeval:PATH (a MediaEval 2016 folder)")
    labels: dict[Path, bool] = {}
    for sample in load_dataset(spec).samples:
        for image in sample.images:
            labels.setdefault(image, sample.gold_label == "fake")
    return sorted(labels.items(), key=lambda item: item[0].stem)


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


def select_tools(
    config: str = typer.Option("forensic-fusion", "--config", help="What is evaluated; see below."),
    dataset: str = typer.Option(..., "--dataset", help="KIND:PATH. forensic-fusion: mediaeval:PATH (a folder with posts.txt"
                                " and images/); a configuration: any data set kind, e.g. mmfakebench:PATH/MMFakeBench_val.json."),
    dataset_option: list[str] = typer.Option([], "--dataset-option", help="key=value for the data set's loader; repeatable."),
    limit: int = typer.Option(100, "--limit", min=2, help="Posts (or images) in the development subset, as even across the"
                              " gold labels as the data allow (the paper used 100)."),
    base: list[str] = typer.Option([], "--base", help="Starting tool set; repeat for several (forensic-fusion: ela; a"
                                   " configuration: its own base_tools when not given)."),
    candidate: list[str] = typer.Option([], "--candidate", help="Tools to try, in order (default: all others)."),
    threshold: float = typer.Option(0.5, "--threshold", min=0.0, max=1.0, help="forensic-fusion: the fused score called fake."),
    seed: int = typer.Option(0, "--seed", min=0, max=SEED_MAX, help="Seed of the balanced subset draw and of every run."),
    compare_to: str = typer.Option("running", "--compare-to", help="running: beat the best so far; baseline: Alg. 2 as printed."),
    mode: str = typer.Option("greedy", "--mode", help="greedy: grow one set; independent: judge each tool alone (OctoTools)."),
    backend: Optional[str] = typer.Option(None, "--backend", help="A configuration's backend for every call."),
    config_file: Optional[Path] = typer.Option(None, "--config-file", help="YAML file with named backends."),
    concurrency: int = typer.Option(4, "--concurrency", min=1, help="A configuration's posts in flight at once."),
    retrieval: str = typer.Option(
        "off", "--retrieval", case_sensitive=False,
        help="Where a configuration's evidence comes from while tool sets are compared: off (default: every trial "
        "sees the same posts without gathered evidence), record, replay or live; see m3d check --help.",
    ),
    evidence_store: Optional[Path] = evidence_store_option(),
) -> None:
    """Greedy tool selection (T2Agent): add each candidate tool in turn and keep it if dev accuracy rises.

    What is evaluated: with --config forensic-fusion, the fused forgery score of the chosen forensic
    tools (ela, jpeg, exif, noise), called fake when it reaches --threshold; no model is called.
    With a configuration that has a toolbox (t2agent and its variants), the whole configuration runs
    on the balanced subset of posts with --backend, each subtask keeping only the chosen action verbs
    (Wikipedia, Google, Detect, VQA, Entity ...), and accuracy is over the data set's own labels (the
    four classes of MMFakeBench, as the paper selected its tools); an abstention counts as wrong.
    """
    from m3d_agents.media.images import load_image
    from m3d_agents.tools.forensics.fusion import FORENSIC_TOOLS, fuse, run_forensics

    if compare_to not in ("running", "baseline") or mode not in ("greedy", "independent"):
        fail("--compare-to is running or baseline; --mode is greedy or independent")
    if config not in EVALUABLE_CONFIGS:
        select_for_config(config, dataset, dataset_option, limit, base, candidate, seed, compare_to, mode, backend, config_file,
                          concurrency, retrieval, evidence_store)
        return
    base = base or ["ela"]
    candidates = candidate or [name for name in FORENSIC_TOOLS if name not in base]
    unknown = [n for n in [*base, *candidates] if n not in FORENSIC_TOOLS]
    if unknown:
        fail(f"tools: unknown tool(s) {', '.join(unknown)}; known: {', '.join(FORENSIC_TOOLS)}")
    try:
        items = balanced_subset(mediaeval_images(dataset), limit, seed)
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

    try:
        console.print(f"base {{{', '.join(base)}}}: accuracy {evaluate(tuple(base)):.3f}")
        outcome = greedy_select(base, candidates, evaluate, on_step=show_step, compare_to=compare_to, mode=mode)  # type: ignore[arg-type]
    except InputError as exc:
        fail(str(exc))
    console.print(f"chosen: {{{', '.join(outcome.chosen)}}} with accuracy {outcome.accuracy:.3f}")


def show_step(step: SelectionStep) -> None:
    mark = "[green]kept[/]" if step.kept else "[dim]dropped[/]"
    console.print(f"+ {step.tool:<6} -> {{{', '.join(step.tools)}}}: accuracy {step.accuracy:.3f} {mark}")


def select_for_config(
    name: str, dataset: str, dataset_option: list[str], limit: int, base: list[str], candidate: list[str], seed: int,
    compare_to: str, mode: str, backend: str | None, config_file: Path | None, concurrency: int, retrieval: str,
    evidence_store: Path | None,
) -> None:
    """Alg. 2 over a whole configuration: each tool set runs the configuration on the same dev posts, each in a run session."""
    import asyncio

    from debates.eval.run.tool_selection import ToolSelectable, balanced_samples, config_accuracy, label_counts
    from debates.config_loader import available_configs, load_config
    from debates.session import RunSession
    from m3d_agents.backends.config import load_backend_settings
    from m3d_agents.backends.factory import BackendPool
    from m3d_agents.datasets import load_dataset, parse_option_pairs, parse_spec
    from retrieval.runpath import parse_mode

    try:
        loaded = load_config(name)
        kind, _ = parse_spec(dataset)
        options = parse_option_pairs(dataset_option)
        retrieval_mode = parse_mode(retrieval)
    except InputError as exc:
        fail(str(exc))
    if not isinstance(loaded, ToolSelectable):
        selectable = [c for c in available_configs() if isinstance(load_config(c), ToolSelectable)]
        fail(f"--config {name!r} cannot be evaluated by select-tools: it has no toolbox; available: "
             f"{', '.join([*EVALUABLE_CONFIGS, *selectable])}")
    toolbox = loaded.tool_verbs()
    base = base or loaded.selection_base()
    candidates = candidate or [v for v in toolbox if v not in base]
    unknown = [v for v in [*base, *candidates] if v not in toolbox]
    if unknown or not base:
        fail(f"give --base and --candidate from the actions of {name}: {', '.join(toolbox)}"
             + (f" (unknown: {', '.join(unknown)})" if unknown else ""))
    if kind == "mediaeval":
        options.setdefault("one_post_per_image", "true")

    async def main() -> None:
        samples = balanced_samples(load_dataset(dataset, options).samples, limit, seed)
        if not samples:
            fail(f"dataset: {dataset} has no labelled sample")
        counts = ", ".join(f"{count} {label}" for label, count in label_counts(samples).items())
        console.print(f"development subset: {len(samples)} posts ({counts}); accuracy over these {len(label_counts(samples))}"
                      f" gold labels, the verdict in the data set's taxonomy ({samples[0].taxonomy})")
        pool = BackendPool(load_backend_settings(config_file))
        loop = asyncio.get_running_loop()

        async def trial(tools: tuple[str, ...]) -> float:
            async with RunSession(loaded.with_tools(tools), pool, backend=backend, retrieval=retrieval_mode,
                                  evidence_store=evidence_store) as session:
                return await config_accuracy(session, samples, concurrency=concurrency, seed=seed)

        def evaluate(tools: tuple[str, ...]) -> float:
            return asyncio.run_coroutine_threadsafe(trial(tools), loop).result()

        try:
            base_accuracy = await asyncio.to_thread(evaluate, tuple(base))
            console.print(f"base {{{', '.join(base)}}}: accuracy {base_accuracy:.3f}")
            outcome = await asyncio.to_thread(
                greedy_select, base, candidates, evaluate, 0.0, show_step, compare_to=compare_to, mode=mode,  # type: ignore[arg-type]
            )
        finally:
            await pool.close()
        console.print(f"chosen: {{{', '.join(outcome.chosen)}}} with accuracy {outcome.accuracy:.3f}")

    run_cli(main())


def list_tools(name: Optional[str] = typer.Argument(None, help="Show one tool's full card.")) -> None:
    """List the tools the agents can call, with their cards."""
    from m3d_agents.tools.catalogue import default_registry

    registry = default_registry()
    try:
        cards = [registry.card(name)] if name else registry.cards()
    except InputError as exc:
        fail(str(exc))
    for card in cards:
        console.print(f"[bold]{card.name}[/] ({card.category}, {card.cost}): {card.description()}")
