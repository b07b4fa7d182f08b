"""The ``m3d`` command line: one module per command, registered here.

Command modules never import this one; what they share lives in :mod:`debates.cli.common`.
"""

from __future__ import annotations

import typer

from debates.cli import (
    backends, check, compare, debate, describe_config, evaluate, evidence, report, reproduce, serve, tools, training,
)
from debates.cli.common import OneLineErrors, guarded, set_debug

app = typer.Typer(
    cls=OneLineErrors, add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
    help="Multimodal misinformation detection by debating agents.",
)


@app.callback()
def options(
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks (AutoGen's included) instead of one error line."),
) -> None:
    set_debug(debug)


app.command("check")(guarded(check.check))
app.command("debate")(guarded(debate.debate))
app.command("evaluate")(guarded(evaluate.evaluate))
app.command("compare")(guarded(compare.compare))
app.command("reproduce")(guarded(reproduce.reproduce))
app.command("evidence")(guarded(evidence.evidence))
app.command("select-tools")(guarded(tools.select_tools))
app.command("tools")(guarded(tools.list_tools))
app.command("backends")(guarded(backends.backends))
app.command("config")(guarded(describe_config.describe_config))
app.command("report")(guarded(report.report))
app.command("serve")(guarded(serve.serve))
app.command("export-sft")(guarded(training.export_sft_command))
for registered in training.train_app.registered_commands:
    if registered.callback is not None:
        registered.callback = guarded(registered.callback)
app.add_typer(training.train_app, name="train")


def main() -> None:
    """Entry point of ``m3d`` and ``python -m debates``."""
    app()
