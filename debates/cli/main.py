"""The ``m3d`` command line: one module per command, registered here.

Command modules never import this one; what they share lives in :mod:`debates.cli.common`.
"""

from __future__ import annotations

import typer

from debates.cli import backends, check, compare, debate, evaluate, evidence, tools, training

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Multimodal misinformation detection by debating agents.")
app.command("check")(check.check)
app.command("debate")(debate.debate)
app.command("evaluate")(evaluate.evaluate)
app.command("compare")(compare.compare)
app.command("evidence")(evidence.evidence)
app.command("select-tools")(tools.select_tools)
app.command("tools")(tools.list_tools)
app.command("backends")(backends.backends)
app.command("export-sft")(training.export_sft_command)
app.add_typer(training.train_app, name="train")


def main() -> None:
    """Entry point of ``m3d`` and ``python -m debates``."""
    app()
