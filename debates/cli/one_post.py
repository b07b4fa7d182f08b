"""What ``m3d check`` and ``m3d debate`` share: one post, typed or a recorded MR2 claim, run through one
configuration in a run session, then its verdict printed.

The two commands are the same command with different defaults: ``m3d check`` runs the single
checker and prints the verdict; ``m3d debate`` runs the async debate and streams every turn as it
finishes. Either runs any configuration, and either lets a person take a debate's seat.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Optional

import typer
from rich.console import Console

from debates.cli.common import (
    build_sample, err_console, evidence_store_option, print_verdict, retrieval_option, run_cli, stream_turn,
)
from debates.config_loader import available_configs

if TYPE_CHECKING:
    from m3d_agents.backends.config import BackendSettings
    from m3d_agents.sample import Sample
    from m3d_agents.verdict import TranscriptTurn, Verdict


_NO_TERMINAL = Console(file=io.StringIO(), force_terminal=False)
"""Where the live line goes while a person sits in a seat: nowhere, since it would write over what they type."""


def one_post_command(default_config: str, *, streams: bool, summary: str) -> Callable[..., None]:
    """The command function, with ``--config`` defaulting to ``default_config``; ``streams``: print each turn as it finishes."""

    def command(
        text: Optional[str] = typer.Option(None, "--text", help="The caption, claim or post text."),
        image: list[Path] = typer.Option([], "--image", help="An image of the post; repeat for several."),
        config: str = typer.Option(
            default_config, "--config", help=f"Configuration to run. Built in: {', '.join(available_configs())}; or a YAML path."
        ),
        backend: Optional[str] = typer.Option(None, "--backend", help="Use this backend for every seat: local, vllm, openai, "
                                              "or a name from the config file."),
        config_file: Optional[Path] = typer.Option(None, "--config-file", help="YAML file with named backends."),
        human_seat: list[str] = typer.Option([], "--human-seat", help="Take this seat of a debate yourself (debater or judge)."),
        max_rounds: Optional[int] = typer.Option(None, "--max-rounds", min=1, help="Override a debate's number of rounds."),
        taxonomy: str = typer.Option("binary", "--taxonomy", help="Label set of the answer (binary, m3d, ...)."),
        claim_date: Optional[str] = typer.Option(None, "--claim-date", help="YYYY-MM-DD"),
        language: Optional[str] = typer.Option(None, "--language", help="The post's language (ISO 639-1, e.g. en); "
                                               "default: detected from the text."),
        source_url: Optional[str] = typer.Option(None, "--source-url", help="Where the post was published (used by the "
                                                 "leakage filter and reliability checks)."),
        replay_mr2: Optional[Path] = typer.Option(
            None, "--replay-mr2", help="Run on a claim of a recorded MR2 trace, with evidence replayed offline from it."
        ),
        sample_id: Optional[str] = typer.Option(None, "--sample-id", help="With --replay-mr2: which claim."),
        summarise: bool = typer.Option(False, "--summarise", help="With --replay-mr2: summarise pages with the backend first."),
        retrieval: Optional[str] = retrieval_option(),
        evidence_store: Optional[Path] = evidence_store_option(),
        as_json: bool = typer.Option(False, "--json", help="Print the Verdict as JSON (turns are not streamed)."),
        video: Optional[Path] = typer.Option(None, "--video", help="The video of the post (mp4, webm, ...); see --config factguard."),
        transcript: Optional[str] = typer.Option(None, "--transcript", help="What is said in the video, as text."),
        save: Optional[Path] = typer.Option(
            None, "--save", help="Also save the verdict as a run folder under this folder (one per post), to review it "
            "later with m3d serve --runs FOLDER or m3d report."
        ),
    ) -> None:
        # Imported when the command runs, not when m3d starts: the run session brings AutoGen and the model clients.
        from debates.debate_engine.human_input import TerminalSeat
        from debates.cli.thinking import ThinkingLine
        from debates.config_loader import load_config, with_overrides
        from debates.session import RunSession
        from m3d_agents.backends.config import load_backend_settings
        from m3d_agents.backends.metering import UsageLedger
        from m3d_agents.errors import InputError
        from retrieval.runpath import parse_mode

        async def main() -> tuple[Verdict, bool, Sample, BackendSettings]:
            settings = load_backend_settings(config_file)
            loaded = load_config(config)
            if max_rounds is not None:
                loaded = with_overrides(loaded, max_rounds=max_rounds)
            session = RunSession(loaded, settings, backend=backend, retrieval=parse_mode(retrieval),
                                 evidence_store=evidence_store, replay_mr2=replay_mr2, summarise=summarise)
            session.check_seats(human_seat, source=config)
            if replay_mr2 is not None:
                sample = session.trace_sample(sample_id)
            elif text is None:
                raise InputError("text", "give the post with --text, or a recorded claim with --replay-mr2 and --sample-id")
            else:
                sample = build_sample(text, image, taxonomy, claim_date, language, source_url, video, transcript)
            # A live line of who is thinking, on a terminal's stderr; left out while a person types in a seat.
            thinking = ThinkingLine(err_console if not human_seat else _NO_TERMINAL, loaded)

            def on_turn(turn: TranscriptTurn) -> None:
                thinking.turn_finished(turn)
                if streams and not as_json:
                    stream_turn(turn)

            async with session:
                with thinking:
                    verdict = await session.run(sample, human_seats={seat: TerminalSeat() for seat in human_seat},
                                                on_turn=on_turn, ledger=UsageLedger(observer=thinking.observe))
                return verdict, session.vision, sample, settings

        verdict, vision, sample, settings = run_cli(main())
        print_verdict(verdict, as_json, sample=sample, settings=settings, vision=vision)
        if save is not None:
            from debates.eval.run.saved_post import save_post_run, saved_run_name

            folder = save_post_run(save, saved_run_name(verdict.config, verdict.sample_id), config, sample, verdict,
                                   verdict.backend or backend or "")
            err_console.print(f"saved as a run folder: {folder} (review it with m3d serve --runs {save})", markup=False,
                              highlight=False, soft_wrap=True)

    command.__doc__ = summary
    return command
