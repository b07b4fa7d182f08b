"""``m3d debate``: run one debate configuration on a post, streaming each turn as it happens."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console

from debates.chat.human_input import TerminalSeat
from debates.cli.common import (
    build_sample, err_console, evidence_store_option, print_verdict, replayed_sample, retrieval_option, run_cli, stream_turn,
)
from debates.cli.thinking import ThinkingLine
from debates.chat.config import DebateConfig
from debates.config_loader import available_configs, load_config, with_overrides
from debates.session import run_sample
from m3d_agents.backends.config import BackendSettings, load_backend_settings
from m3d_agents.backends.factory import BackendPool
from m3d_agents.backends.metering import UsageLedger
from m3d_agents.errors import InputError
from m3d_agents.sample import Sample
from m3d_agents.verdict import TranscriptTurn, Verdict


_NO_TERMINAL = Console(file=io.StringIO(), force_terminal=False)


def debate(
    config: str = typer.Option("async", "--config", help=f"Built in: {', '.join(available_configs())}; or a YAML path."),
    text: Optional[str] = typer.Option(None, "--text", help="The caption, claim or post text."),
    image: list[Path] = typer.Option([], "--image", help="An image of the post; repeat for several."),
    backend: Optional[str] = typer.Option(None, "--backend", help="Use this backend for every seat."),
    config_file: Optional[Path] = typer.Option(None, "--config-file", help="YAML file with named backends."),
    human_seat: list[str] = typer.Option([], "--human-seat", help="Take this seat yourself (debater or judge)."),
    max_rounds: Optional[int] = typer.Option(None, "--max-rounds", min=1, help="Override the config's number of rounds."),
    taxonomy: str = typer.Option("binary", "--taxonomy", help="Label set of the answer (binary, m3d, ...)."),
    claim_date: Optional[str] = typer.Option(None, "--claim-date", help="YYYY-MM-DD"),
    language: Optional[str] = typer.Option(None, "--language", help="The post's language (ISO 639-1, e.g. en); default: detected from the text."),
    source_url: Optional[str] = typer.Option(None, "--source-url", help="Where the post was published (used by the leakage filter and reliability checks)."),
    replay_mr2: Optional[Path] = typer.Option(
        None, "--replay-mr2", help="Debate a claim of a recorded MR2 trace, with evidence replayed offline from it."
    ),
    sample_id: Optional[str] = typer.Option(None, "--sample-id", help="With --replay-mr2: which claim."),
    summarise: bool = typer.Option(False, "--summarise", help="With --replay-mr2: summarise pages with the backend first."),
    retrieval: Optional[str] = retrieval_option(),
    evidence_store: Optional[Path] = evidence_store_option(),
    as_json: bool = typer.Option(False, "--json", help="Print the Verdict as JSON (turns are not streamed)."),
    video: Optional[Path] = typer.Option(None, "--video", help="The video of the post (mp4, webm, ...); see --config factguard."),
    transcript: Optional[str] = typer.Option(None, "--transcript", help="What is said in the video, as text."),
    save: Optional[Path] = typer.Option(
        None, "--save", help="Also save the debate as a run folder under this folder (one per debate), to review it "
        "later with m3d serve --runs FOLDER or m3d report."
    ),
) -> None:
    """Run a configuration on one post; the turns stream live, then the verdict, its evidence and the tool findings."""
    from retrieval.runpath import RunRetrieval, open_retrieval, parse_mode

    async def main() -> tuple[Verdict, bool, Sample, BackendSettings]:
        settings = load_backend_settings(config_file)
        loaded = load_config(config)
        if max_rounds is not None:
            loaded = with_overrides(loaded, max_rounds=max_rounds)
        if human_seat and not isinstance(loaded, DebateConfig):
            raise InputError("human-seat", f"the {loaded.name} configuration ({loaded.strategy}) has no seats to take")
        for seat in human_seat:
            if seat not in {s.name for s in loaded.seats}:  # type: ignore[attr-defined]
                listed = ", ".join(f"{s.name} ({s.role})" for s in loaded.seats)  # type: ignore[attr-defined]
                raise InputError("human-seat", f"the {loaded.name} configuration has no seat named {seat!r}; its seats: "
                                               f"{listed} (m3d seats {config} lists them)")
        pool = BackendPool(settings)
        sources: RunRetrieval | None = None
        try:
            options: dict[str, Any] = {}
            if replay_mr2 is not None:
                summariser = pool.get(backend or pool.default_backend) if summarise else None
                sample, options = replayed_sample(replay_mr2, sample_id, summariser)
            elif text is None:
                raise InputError("text", "give the post with --text, or a recorded claim with --replay-mr2 and --sample-id")
            else:
                sample = build_sample(text, image, taxonomy, claim_date, language, source_url, video, transcript)
                sources = open_retrieval(loaded, pool, mode=parse_mode(retrieval), store_path=evidence_store, backend=backend)
                options = sources.context_options()
            # The live line would write over what a person in a seat types, so it is left out then.
            thinking = ThinkingLine(err_console if not human_seat else _NO_TERMINAL, loaded)

            def on_turn(turn: TranscriptTurn) -> None:
                thinking.turn_finished(turn)
                if not as_json:
                    stream_turn(turn)

            with thinking:
                verdict = await run_sample(
                    loaded, sample, pool, backend=backend, **options,
                    human_seats={seat: TerminalSeat() for seat in human_seat},
                    on_turn=on_turn, ledger=UsageLedger(observer=thinking.observe),
                )
            vision = pool.get(backend or getattr(loaded, "backend", None) or pool.default_backend).vision
            return verdict, vision, sample, settings
        finally:
            if sources is not None:
                await sources.close()
            await pool.close()

    verdict, vision, sample, settings = run_cli(main())
    print_verdict(verdict, as_json, sample=sample, settings=settings, vision=vision)
    if save is not None:
        from debates.eval.run.saved_post import save_post_run, saved_run_name

        folder = save_post_run(save / saved_run_name(verdict.config, verdict.sample_id), config, sample, verdict,
                               verdict.backend or backend or "")
        err_console.print(f"saved as a run folder: {folder} (review it with m3d serve --runs {save})", markup=False,
                          highlight=False, soft_wrap=True)
