"""What every ``m3d`` command shares: the consoles, one-line errors, building a typed sample, printing a verdict."""

from __future__ import annotations

import asyncio
import errno
import functools
import json
import logging
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Coroutine, Iterable, NoReturn, TypeVar

import typer
from pydantic import BaseModel
from typer.core import TyperGroup
from rich.console import Console
from rich.errors import MarkupError
from rich.panel import Panel
from rich.segment import Segment
from rich.text import Text

from m3d_agents import library_warnings
from m3d_agents.errors import BackendError, InputError, one_line
from m3d_agents.redaction import RedactingFormatter, redact, redact_data

if TYPE_CHECKING:  # what a command that only prints never builds (--help, m3d config)
    from m3d_agents.backends.config import BackendSettings
    from m3d_agents.sample import Sample
    from m3d_agents.verdict import TranscriptTurn, Verdict

class RedactingConsole(Console):
    """A console that masks keys (:mod:`m3d_agents.redaction`) in everything it prints, whoever calls it.

    Strings are redacted before markup and wrapping (a key folded across two lines would no longer
    match); whatever reaches the terminal another way (a ``Text`` built by hand, a table cell) is
    checked once more as the plain text of the finished output, and printed plain and masked if a key
    is found there."""

    def render_str(self, text: str, **options: Any) -> Text:
        clean = redact(text)
        try:
            return super().render_str(clean, **options)
        except MarkupError:
            return super().render_str(clean, **{**options, "markup": False})

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        segments = list(buffer)
        plain = "".join(segment.text for segment in segments if not segment.control)
        clean = redact(plain)
        return super()._render_buffer(segments) if clean == plain else clean


console = RedactingConsole()
err_console = RedactingConsole(stderr=True)
T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])


_debug = False


def debug_enabled() -> bool:
    """``m3d --debug`` (or ``M3D_DEBUG=1``): show tracebacks, AutoGen's included, instead of one line."""
    return _debug or os.environ.get("M3D_DEBUG", "").lower() in ("1", "true", "yes")


def set_debug(on: bool) -> None:
    global _debug
    _debug = on
    configure_logging()


class _ReRaisedByAutoGen(logging.Filter):
    """AutoGen's runtime logs every agent's failure with its traceback, then re-raises it to the team,
    which is where the CLI reports it on one line; the log copy is only for ``--debug``."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and record.name.startswith("autogen"))


_HANDLER_MARK = "_m3d_cli_handler"


def configure_logging() -> None:
    """One stderr handler for the whole process: every record redacted, and without ``--debug``
    one line per record (warnings and worse) and none of AutoGen's re-raised tracebacks."""
    library_warnings.install()
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, _HANDLER_MARK, False)]:
        root.removeHandler(handler)
    debug = debug_enabled()
    handler = logging.StreamHandler(_StderrProxy())
    setattr(handler, _HANDLER_MARK, True)
    handler.setFormatter(RedactingFormatter("%(levelname)s %(name)s: %(message)s", with_traceback=debug))
    if not debug:
        handler.addFilter(_ReRaisedByAutoGen())
    handler.setLevel(logging.DEBUG if debug else logging.WARNING)
    root.addHandler(handler)
    if root.level > logging.WARNING or root.level == logging.NOTSET:
        root.setLevel(logging.WARNING)


class _StderrProxy:
    """Writes to whatever ``sys.stderr`` is at the time (a test runner swaps it per invocation)."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def fail(message: str, code: int = 2) -> NoReturn:
    """Print ``error: <message>`` as one line, keys redacted, cut to a readable length, and exit with ``code``."""
    line = one_line(redact(message))
    err_console.print(Text.assemble(("error:", "bold red"), " ", line), soft_wrap=True)
    raise typer.Exit(code)


class OneLineErrors(TyperGroup):
    """The command group whose usage errors (a missing option, a value out of range) read like every
    other error: one ``error:`` line naming the option, not a framed usage box."""

    def main(self, args: Any = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, windows_expand_args: bool = True, **extra: Any) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, standalone_mode, windows_expand_args, **extra)
        try:
            code = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except typer.TyperException as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":
                exc.show()  # type: ignore[attr-defined]
                sys.exit(exc.exit_code)
            context = getattr(exc, "ctx", None)
            hint = f" (see m3d {context.info_name} --help)" if context is not None and context.parent is not None else ""
            err_console.print(Text.assemble(("error:", "bold red"), " ", " ".join(exc.format_message().split()), hint),
                              soft_wrap=True)
            sys.exit(exc.exit_code)
        except typer.Abort:
            err_console.print(Text.assemble(("error:", "bold red"), " aborted"), soft_wrap=True)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


def describe(exc: BaseException) -> str:
    """What went wrong, in the words a user can act on."""
    if isinstance(exc, (InputError, BackendError)):
        # Both transports raise these, the SDK's errors translated where they are raised.
        return str(exc)
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        where = f"{exc.filename}: " if exc.filename is not None else ""
        return f"{where}the disk is full ({exc.strerror}); free some space and rerun (finished work is kept)"
    if isinstance(exc, OSError) and exc.filename is not None:
        return f"{exc.filename}: {exc.strerror or exc}"
    if isinstance(exc, MemoryError):
        return "out of memory; lower --concurrency or the input limits"
    text = str(exc).strip().splitlines()
    return f"unexpected {type(exc).__name__}: {text[-1] if text else 'no message'} (rerun with m3d --debug for the traceback)"


def show_traceback() -> None:
    """With ``--debug``: the traceback of the error being handled, redacted like everything else."""
    if debug_enabled():
        import traceback

        sys.stderr.write(redact(traceback.format_exc()))


def guarded(command: F) -> F:
    """A command whose every failure is one ``error:`` line and exit status 2 (1 for a bug), never a traceback.

    ``--debug`` prints the traceback (redacted) before that line.
    """

    @functools.wraps(command)
    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return command(*args, **kwargs)
        except (typer.Exit, typer.Abort, typer.TyperException, KeyboardInterrupt):
            raise
        except (InputError, BackendError) as exc:
            show_traceback()
            fail(describe(exc))
        except Exception as exc:  # noqa: BLE001 - the last line of defence for a CLI
            show_traceback()
            fail(describe(exc), 2 if isinstance(exc, OSError) else 1)

    return run  # type: ignore[return-value]


def build_sample(
    text: str, images: list[Path], taxonomy: str, claim_date: str | None, language: str | None, source_url: str | None,
    video: Path | None = None, transcript: str | None = None,
) -> Sample:
    from pydantic import ValidationError

    from m3d_agents.sample import Sample, SampleMetadata, VideoRef

    if transcript is not None and video is None:
        raise InputError("transcript", "a transcript belongs to a video; give the video with --video")
    try:
        return Sample(
            text=text,
            images=images,
            video=VideoRef(path=video, transcript=transcript) if video is not None else None,
            taxonomy=taxonomy,
            metadata=SampleMetadata.model_validate(
                {"claim_date": claim_date, "language": language, "source_url": source_url}
            ),
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "sample"
        raise InputError(field, first["msg"]) from exc


RETRIEVAL_HELP = (
    "Where evidence comes from: live (ask the providers whose keys are set), record (reuse the evidence "
    "store, ask for the rest), replay (the store only, no network), off. Default: record when the "
    "configuration has a retrieval block, else off."
)
EVIDENCE_STORE_HELP = "The evidence store (SQLite) to record into or replay from; default <cache dir>/evidence.sqlite."


def written_path(value: str) -> Path:
    """A path the command writes to, as typed: an empty one is refused, since it would silently mean the
    current folder (``--out ""`` used to write a run over the files of the folder it was typed in)."""
    if not str(value).strip():
        raise typer.BadParameter("is empty; name a folder or file (an empty value would mean the current folder)")
    return Path(value)


def retrieval_option() -> Any:
    return typer.Option(None, "--retrieval", help=RETRIEVAL_HELP, case_sensitive=False)


def evidence_store_option() -> Any:
    return typer.Option(None, "--evidence-store", help=EVIDENCE_STORE_HELP, parser=written_path)


def demo_backends(verdict: Verdict, settings: BackendSettings) -> list[str]:
    """The backends of a verdict that are the packaged 270M model (the embedded default)."""
    demo = []
    for name in filter(None, verdict.backend.split(",")):
        try:
            config = settings.get(name.split(":")[0])
        except InputError:
            continue
        if config.spec.embedded and config.local.model_path is None and not config.base_url:
            demo.append(name)
    return demo


def tool_findings(sample: Sample | None, vision: bool) -> list[str]:
    """What the image tools reported to a model that cannot see images (cached during the run, so free)."""
    if sample is None or not sample.images:
        return []
    if vision:
        return [f"tools: the model saw the {len(sample.images)} image(s) itself"]
    from m3d_agents.media.images import load_image
    from m3d_agents.media.post_content import describe_image

    lines = []
    for i, path in enumerate(sample.images, start=1):
        try:
            found = describe_image(load_image(path)).replace("\n", "; ")
        except InputError as exc:
            found = f"unreadable: {exc}"
        lines.append(f"tools on image {i}: {found}")
    return lines


def print_verdict(
    verdict: Verdict,
    as_json: bool,
    *,
    sample: Sample | None = None,
    settings: BackendSettings | None = None,
    vision: bool = False,
) -> None:
    """The verdict, then the evidence report, the tool findings, the cost, and a plain note when the
    backend is the 270M demonstration model."""
    if as_json:
        print_json(verdict)
        return
    if verdict.abstained:
        console.print(Text.assemble(("ABSTAINED", "bold yellow"), ": ", redact(verdict.abstain_reason or "")), soft_wrap=True)
    else:
        colour = "red" if verdict.is_misinformation else "green"
        confidence = f"{verdict.confidence:.2f}" if verdict.confidence is not None else "n/a"
        console.print(
            f"[bold {colour}]{verdict.label}[/] (misinformation: {verdict.is_misinformation}, confidence {confidence})"
        )
        for block in explanation_lines(verdict):
            console.print(block, soft_wrap=not console.is_terminal)
        if verdict.explanation is not None:
            shown = verdict.explanation.display_ids
            for point in verdict.explanation.key_points:
                cited = ", ".join(shown.get(i, i) for i in point.evidence_ids)
                console.print(redact(f"- {point.text} [{cited}]"), markup=False)
    if verdict.evidence_report is not None:
        for line in verdict.evidence_report.lines():
            console.print(redact(line), markup=False)
    for line in tool_findings(sample, vision):
        console.print(redact(line), markup=False)
    acc = verdict.accounting
    recited = f", {acc.recited_prompts} answer(s) repeating their prompt" if acc.recited_prompts else ""
    console.print(
        f"[dim]{verdict.config} on {verdict.backend}: {acc.model_calls} model calls, "
        f"{acc.prompt_tokens}+{acc.completion_tokens} tokens, {acc.cache_hits} cache hits{recited}, "
        f"{acc.cut_answers} answers cut at the token cap, "
        f"wall {verdict.diagnostics.wall_time_s if verdict.diagnostics else 0.0:.2f}s[/]"
    )
    demo = demo_backends(verdict, settings) if settings is not None else []
    if demo:
        from m3d_agents.backends.local_server import DEMO_MODEL

        console.print(
            f"[bold yellow]note:[/] backend {', '.join(demo)} is {DEMO_MODEL}. It shows that the pipeline runs "
            "end to end; its verdicts say little about the post. Use --backend vllm or openai for real checks."
        )


SENTENCE_END = (".", "!", "?", '"', "'", ")", "]", "»", "”", "’", ":")
BOUNDED_RATIONALE = 590
"""Near the checker's bound on a rationale (600 characters): an answer this long without a sentence end was cut."""


def explanation_lines(verdict: Verdict) -> list[Text]:
    """The verdict's reason as one block of its own, labelled, so that it never runs into the next line: none where
    the model repeated its prompt instead of giving one, and a note where it breaks off mid-sentence."""
    rationale = verdict.rationale.strip()
    if not rationale:
        return []
    if verdict.rationale_recites_prompt:
        return [Text.assemble(("explanation:", "bold"), " none: the model's answer repeats its prompt (the post, what the "
                              "tools found, the task) instead of giving a reason, so it is not shown")]
    # A model's words, which may repeat a key a server echoed: redacted like every streamed turn.
    shown = Text.assemble(("explanation:", "bold"), " ", redact(" ".join(rationale.split())))
    trailing_space = verdict.rationale != verdict.rationale.rstrip()
    if not rationale.endswith(SENTENCE_END) and (trailing_space or len(rationale) >= BOUNDED_RATIONALE):
        shown.append(" [the answer breaks off here, mid-sentence]", style="dim")
    return [shown]


def print_json(data: Any) -> None:
    """``data`` (a pydantic model or plain JSON data) as JSON on stdout, every string in it redacted."""
    plain = data.model_dump(mode="json") if isinstance(data, BaseModel) else data
    sys.stdout.write(json.dumps(redact_data(plain), indent=2) + "\n")


def stream_turn(turn: TranscriptTurn) -> None:
    """Print a finished turn with its speaker, round and parsed answer."""
    stance = turn.stance or ("(no answer)" if turn.parse_error else "")
    title = f"{turn.speaker} · {turn.role} · round {turn.round}" + (f" · {stance}" if stance else "")
    console.print(Panel(Text(redact(turn.text.strip())), title=Text(title), title_align="left"))


class ProgressBar:
    """A run's progress on stderr: done of total, time, ETA and the running figures (a
    :class:`~debates.eval.run.evaluate.RunProgress`); use it as a context manager around the run."""

    def __init__(self, enabled: bool = True) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

        self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                            TextColumn("ETA"), TimeRemainingColumn(), TextColumn("{task.fields[stats]}"),
                            console=err_console, disable=not enabled)
        self.task: Any = None

    def start(self, name: str, total: int) -> None:
        self.task = self.bar.add_task(name, total=total, stats="")

    def update(self, tally: Any) -> None:
        if self.task is not None:
            self.bar.update(self.task, completed=tally.done, stats=tally.line())

    def __enter__(self) -> "ProgressBar":
        self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.stop()


def run_cli(coro: Coroutine[Any, Any, T]) -> T:
    """Run a command's coroutine; errors become one line each (see :func:`guarded`, which every command has)."""
    configure_logging()
    try:
        return asyncio.run(coro)
    except (InputError, BackendError) as exc:
        fail(describe(exc))


