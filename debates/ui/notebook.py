"""Debates in Jupyter: each turn shown as it arrives, the verdict, and a seat for a person.

The notebooks under ``notebooks/`` use these so that their cells stay short enough to read. Model
and person text is untrusted, so it is escaped before it is shown as HTML. IPython and ipywidgets
are imported only when something is shown: the package itself does not need Jupyter.
"""

from __future__ import annotations

import asyncio
from html import escape
from typing import Any, Awaitable, Iterable, Optional, Sequence

from autogen_core import CancellationToken

from debates.strategy import StrategyConfig
from debates.config_loader import available_configs, load_config
from debates.debate_engine.human_input import QueueInput
from debates.debate_engine.state import DESK_NAME, DebateState, TurnRecord
from m3d_agents.backends.config import BackendConfig, load_backend_settings
from m3d_agents.backends.factory import BackendPool
from debates.debate_engine.diagnostics import DebateDiagnostics
from m3d_agents.labels import Taxonomy, get_taxonomy
from m3d_agents.redaction import redact
from m3d_agents.sample import Sample
from m3d_agents.verdict import TranscriptTurn, Verdict

_COLOURS = {"misinformation": "#c0392b", "not_misinformation": "#1e8449", "none": "#7f8c8d", "person": "#2471a3"}
_TEXT = "white-space: pre-wrap; font-family: inherit; margin: 4px 0 0 0"


def _stance_colour(stance: str | None, taxonomy: Taxonomy) -> str:
    if stance is None or stance not in taxonomy.labels:
        return _COLOURS["none"]
    return _COLOURS["misinformation" if taxonomy.is_misinformation(stance) else "not_misinformation"]


def backend_pool(backend: str, vllm_base_url: str | None = None) -> BackendPool:
    """The backends of the config file (or the built-in three), checked for ``backend``.

    ``vllm_base_url`` points the ``vllm`` backend at a server, as ``M3D_VLLM_BASE_URL`` would.
    An unknown backend name is an error here, before any debate starts.
    """
    settings = load_backend_settings()
    if vllm_base_url:
        base = settings.backends.get("vllm", BackendConfig(kind="vllm"))
        settings.backends["vllm"] = base.with_overrides(base_url=vllm_base_url)
    pool = BackendPool(settings)
    pool.config(backend)
    return pool


def turn_html(turn: TurnRecord | TranscriptTurn, taxonomy: Taxonomy, *, person: bool = False) -> str:
    """One turn of any strategy: who spoke, in which round, what they answered, and their words."""
    shown = turn.transcript_turn() if isinstance(turn, TurnRecord) else turn
    if shown.speaker == DESK_NAME:
        stance = "answers to the queries"
    elif shown.stance:
        stance = shown.stance
    else:
        stance = f"no readable answer: {shown.parse_error}" if shown.parse_error else ""
    turn = shown
    who = f"{escape(turn.speaker)}{' (you)' if person else ''}"
    colour = _COLOURS["person"] if person else _stance_colour(turn.stance, taxonomy)
    return (
        f'<div style="border-left: 4px solid {colour}; padding: 2px 10px; margin: 6px 0">'
        f"<b>{who}</b> · {escape(turn.role)} · round {turn.round}"
        + (f' · <b style="color: {_stance_colour(turn.stance, taxonomy)}">{escape(stance)}</b>' if stance else "")
        + f'<pre style="{_TEXT}">{escape(turn.text.strip())}</pre></div>'
    )


def verdict_html(verdict: Verdict) -> str:
    """The outcome first (label or abstention with its reason), then how it was reached and what it cost."""
    d = verdict.diagnostics
    if verdict.abstained:
        head = f'<b style="color: {_COLOURS["none"]}">ABSTAINED</b>: {escape(verdict.abstain_reason or "")}'
    else:
        colour = _COLOURS["misinformation" if verdict.is_misinformation else "not_misinformation"]
        confidence = f"{verdict.confidence:.2f}" if verdict.confidence is not None else "n/a"
        head = (f'<b style="color: {colour}">{escape(verdict.label or "")}</b> '
                f"(misinformation: {verdict.is_misinformation}, confidence {confidence}, decided by "
                f"{escape(str(d.decided_by if d else None))})")
    acc = verdict.accounting
    facts = [
        ("configuration", f"{verdict.config} on {verdict.backend}"),
        ("why it stopped", d.stop_reason if d else ""),
    ]
    if isinstance(d, DebateDiagnostics):
        facts += [
            ("rounds / consensus in round", f"{d.rounds} / {d.consensus_round}"),
            ("answer changes per agent", str(d.answer_changes)),
            ("overturned the first round's majority", str(d.overturned_first_round_majority)),
        ]
    facts += [
        ("model calls / tokens (prompt + completion)", f"{acc.model_calls} / {acc.prompt_tokens} + {acc.completion_tokens}"),
        ("cache hits / wall time", f"{acc.cache_hits} / {d.wall_time_s if d else 0.0:.1f} s"),
    ]
    if verdict.evidence_report is not None:
        facts.append(("evidence", "\n".join(verdict.evidence_report.lines())))
    rows = "".join(f"<tr><td style='text-align:left'>{escape(k)}</td><td style='text-align:left'>{escape(v)}</td></tr>"
                   for k, v in facts)
    rationale = (f"<details><summary>rationale</summary><pre style='{_TEXT}'>{escape(verdict.rationale.strip())}</pre>"
                 "</details>") if verdict.rationale.strip() else ""
    return (f'<div style="border: 1px solid #bbb; padding: 6px 10px; margin: 8px 0">Verdict on post '
            f"{escape(verdict.sample_id)}: {head}{rationale}<table>{rows}</table></div>")


def verdicts_table_html(verdicts: Sequence[Verdict]) -> str:
    """Verdicts side by side, one row per post and configuration."""
    header = "".join(f"<th>{h}</th>" for h in ("post", "configuration", "answer", "confidence",
                                                "decided by / abstained because", "rounds", "model calls", "wall s"))
    rows = []
    for v in verdicts:
        answer = "abstained" if v.abstained else str(v.label)
        d = v.diagnostics
        why = v.abstain_reason if v.abstained else str(d.decided_by if d else None)
        confidence = "" if v.confidence is None else f"{v.confidence:.2f}"
        rounds = str(d.rounds) if isinstance(d, DebateDiagnostics) else ""
        cells = (v.sample_id, v.config, answer, confidence, why or "", rounds, str(v.accounting.model_calls),
                 f"{d.wall_time_s if d else 0.0:.1f}")
        rows.append("<tr>" + "".join(f"<td style='text-align:left'>{escape(c)}</td>" for c in cells) + "</tr>")
    return f"<table><tr>{header}</tr>{''.join(rows)}</table>"


def config_html(config: StrategyConfig) -> str:
    """A configuration in two lines: what it is, and the settings that make it so."""
    facts = escape(config.outline())
    return f"<h3>{escape(config.name)}</h3><p>{escape(config.description.strip())}<br><small>{facts}</small></p>"


def configurations_html() -> str:
    """Every built-in configuration, read from the registry: a new YAML file or strategy appears here by itself."""
    rows = []
    for name in available_configs():
        config = load_config(name)
        kind = config.run_by()
        rows.append(f"<tr><td style='text-align:left'><code>{escape(name)}</code></td><td style='text-align:left'>{escape(kind)}</td>"
                    f"<td style='text-align:left'>{escape(config.description.strip())}</td></tr>")
    return f"<table><tr><th>configuration</th><th>strategy / protocol</th><th>what it does</th></tr>{''.join(rows)}</table>"


def stances_table_html(verdict: Verdict) -> str:
    """Who answered what in each round: where the answers moved, and after whose arguments."""
    rounds = max((t.round for t in verdict.transcript), default=0)
    speakers = list(dict.fromkeys(t.speaker for t in verdict.transcript if t.speaker != DESK_NAME))
    answers = {(t.speaker, t.round): t.stance or ("unreadable" if t.parse_error else "") for t in verdict.transcript}
    header = "<th>seat</th>" + "".join(f"<th>round {r}</th>" for r in range(1, rounds + 1))
    rows = "".join(
        f"<tr><td style='text-align:left'>{escape(s)}</td>"
        + "".join(f"<td>{escape(answers.get((s, r), ''))}</td>" for r in range(1, rounds + 1)) + "</tr>"
        for s in speakers
    )
    return f"<table><tr>{header}</tr>{rows}</table>"


def show_html(html: str, output: Any = None) -> None:
    """Display HTML in the cell, or append it to an ``ipywidgets.Output`` that outlives the cell."""
    from IPython.display import HTML, display

    if output is None:
        display(HTML(html))
    else:
        output.append_display_data(HTML(html))


def show_post(sample: Sample) -> None:
    """The post as a person sees it: its text, its images and what is known about it."""
    from IPython.display import Image, display

    meta = sample.metadata
    known = ", ".join(f"{k}: {v}" for k, v in (("claim date", meta.claim_date), ("language", meta.language),
                                                ("source", meta.source_url)) if v)
    show_html(f"<b>Post {escape(sample.id)}</b>" + (f" <small>({escape(known)})</small>" if known else "")
              + f"<pre style='{_TEXT}'>{escape(sample.text)}</pre>")
    for image in sample.images:
        display(Image(filename=str(image), width=360))


class TranscriptView:
    """An ``on_message`` callback for a run session's ``run`` that shows every turn the moment it is finished.

    ``output`` (an ``ipywidgets.Output``) keeps the transcript in one place while the debate runs in
    the background, which a person's seat needs; without it turns go to the running cell.
    """

    def __init__(self, people: Iterable[str] = (), output: Any = None, taxonomy: str = "binary") -> None:
        self.people = set(people)
        self.taxonomy = get_taxonomy(taxonomy)
        self.output = output
        self.shown = 0

    def __call__(self, message: Any, state: DebateState) -> None:
        turn = state.finished_turn(message)
        if turn is None:
            return
        self.shown += 1
        show_html(turn_html(turn, state.taxonomy, person=turn.speaker in self.people), self.output)

    def turn(self, turn: TranscriptTurn) -> None:
        """An ``on_turn`` callback for a run session's ``run``: the same display for any strategy's turns."""
        self.shown += 1
        show_html(turn_html(turn, self.taxonomy, person=turn.speaker in self.people), self.output)

    def verdict(self, verdict: Verdict) -> None:
        show_html(verdict_html(verdict), self.output)

    def error(self, exc: BaseException) -> None:
        show_html(f"<b style='color: {_COLOURS['misinformation']}'>The debate failed</b>: "
                  f"{escape(type(exc).__name__)}: {escape(redact(str(exc)))}", self.output)


def line_input(prompt: str) -> str:
    """A person's answer through ``input()``: where widgets cannot be shown, such as a plain console."""
    print(prompt)
    return input("Your answer (one line; end with your verdict, e.g. FINAL ANSWER: fake): ")


class WidgetInput(QueueInput):
    """A seat for a person in a notebook: what the seat sees, a text box and a Send button.

    The debate must run in the background (see :func:`run_in_background`): a cell that is still
    running keeps Jupyter from delivering the button's clicks, so an awaited debate would wait for
    ever. Answers are handed to the debate's event loop thread-safely, whichever thread the click
    arrives on.
    """

    def __init__(self, hint: str = "") -> None:
        super().__init__()
        import ipywidgets as widgets

        self.status = widgets.HTML("Waiting for your turn: the agents speak first where the debate says so.")
        self.screen = widgets.HTML()
        self.box = widgets.Textarea(
            placeholder=hint or "Write your argument, then end with your verdict, e.g. FINAL ANSWER: fake",
            layout=widgets.Layout(width="100%", height="110px"), disabled=True,
        )
        self.send = widgets.Button(description="Send", button_style="primary", disabled=True)
        self.send.on_click(self._on_send)
        self.widget = widgets.VBox([self.status, self.screen, self.box, self.send])
        self._loop: asyncio.AbstractEventLoop | None = None
        self.turns = 0

    async def __call__(self, prompt: str, cancellation_token: Optional[CancellationToken] = None) -> str:
        self._loop = asyncio.get_running_loop()
        self.turns += 1
        self.screen.value = f"<pre style='{_TEXT}; max-height: 420px; overflow: auto'>{escape(prompt)}</pre>"
        self.status.value = "<b>Your turn.</b> Read the screen below, write your answer and press Send."
        self.box.disabled = self.send.disabled = False
        return await self.next_answer(cancellation_token)

    def _on_send(self, _button: Any = None) -> None:
        text = self.box.value.strip()
        if not text:
            self.status.value = "<b>Your turn.</b> The box is empty: write your answer first."
            return
        self.box.value = ""
        self.box.disabled = self.send.disabled = True
        self.status.value = "Sent. The others are answering; the transcript below grows as they do."
        if self._loop is None:
            self.put(text)
        else:
            self._loop.call_soon_threadsafe(self.put, text)


def run_in_background(debate: Awaitable[Verdict], view: TranscriptView) -> "asyncio.Task[Verdict]":
    """Start a debate and return at once, so the kernel stays free for the person's clicks.

    The verdict, or the error, is shown in the view when the debate ends.
    """
    task: asyncio.Task[Verdict] = asyncio.ensure_future(debate)

    def finished(done: "asyncio.Task[Verdict]") -> None:
        if done.cancelled():
            show_html("The debate was cancelled.", view.output)
        elif done.exception() is not None:
            view.error(done.exception())  # type: ignore[arg-type]
        else:
            view.verdict(done.result())

    task.add_done_callback(finished)
    return task
