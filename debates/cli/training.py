"""``m3d export-sft`` and ``m3d train``: training data from recorded runs, and GRPO/SFT on TRL (extra ``train``)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from debates.cli.common import console, fail, written_path

train_app = typer.Typer(no_args_is_help=True, help="Train a model with the FactGuard rewards (needs the 'train' extra).")


def export_sft_command(
    run_dir: Path = typer.Argument(..., help="A run folder written by m3d evaluate --record-trajectories."),
    out: Path = typer.Option(..., "--out", parser=written_path, help="The JSONL file to write."),
    fmt: str = typer.Option("hf", "--format", help="hf (TRL conversational) or llamafactory."),
    review: int = typer.Option(20, "--review", min=0, help="Rows copied to <out>.review.jsonl for a manual check."),
) -> None:
    """Export the trajectories of a run as SFT data, keeping only well-formed, right answers."""
    from debates.strategies.factguard.training.export import export_sft
    from m3d_agents.errors import InputError

    if fmt not in ("hf", "llamafactory"):
        fail(f"--format {fmt!r}: choose hf or llamafactory")
    try:
        report = export_sft(run_dir, out, fmt, review)  # type: ignore[arg-type]
    except InputError as exc:
        fail(str(exc))
    dropped = ", ".join(f"{k}: {v}" for k, v in report.dropped.items()) or "none"
    console.print(f"{report.out}: kept {report.kept} of {report.trajectories} trajectories ({report.rows} rows); dropped {dropped}")
    if report.review:
        console.print(f"review sample: {report.review}")


def _train_ready() -> None:
    try:
        import trl  # noqa: F401
    except ImportError:
        fail("training needs the 'train' extra: .venv/bin/pip install -e '.[train]'")


@train_app.command("prepare-local-model")
def prepare_local_model_command(
    out: Optional[Path] = typer.Option(None, "--out", parser=written_path, help="Folder to write; default: the cache."),
    force: bool = typer.Option(False, "--force", help="Convert again even if the folder exists."),
) -> None:
    """Convert the embedded 270M GGUF model to a trainable folder with a chat template (once)."""
    _train_ready()
    from debates.strategies.factguard.training.local_model import prepare_local_model

    console.print(str(prepare_local_model(out, force)))


@train_app.command("sft")
def sft_command(
    data: Path = typer.Option(..., "--data", help="JSONL from m3d export-sft (hf format)."),
    model: Optional[Path] = typer.Option(None, "--model", help="A transformers model folder; default: the embedded model."),
    out: Path = typer.Option(Path("runs/sft"), "--out", parser=written_path),
    max_steps: int = typer.Option(-1, "--max-steps"),
    learning_rate: float = typer.Option(1e-5, "--learning-rate"),
) -> None:
    """Supervised fine-tuning on exported trajectories (assistant tokens only)."""
    _train_ready()
    from debates.strategies.factguard.training.local_model import prepare_local_model
    from debates.strategies.factguard.training.sft import SFTSettings, train_sft

    trainer = train_sft(model or prepare_local_model(), data, out, SFTSettings(max_steps=max_steps, learning_rate=learning_rate))
    trainer.save_model(str(out))
    console.print(f"{out}: {trainer.state.global_step} steps")


@train_app.command("grpo")
def grpo_command(
    dataset: str = typer.Option(..., "--dataset", help="KIND:PATH of labelled video posts."),
    dataset_option: list[str] = typer.Option([], "--dataset-option", "-o"),
    config: str = typer.Option("factguard", "--config"),
    model: Optional[Path] = typer.Option(None, "--model", help="A transformers model folder; default: the embedded model."),
    out: Path = typer.Option(Path("runs/grpo"), "--out", parser=written_path),
    limit: Optional[int] = typer.Option(None, "--limit", min=1),
    max_steps: int = typer.Option(-1, "--max-steps"),
    num_generations: int = typer.Option(8, "--num-generations", min=2),
    max_completion_length: int = typer.Option(768, "--max-completion-length", min=8),
) -> None:
    """GRPO with the FactGuard rewards, the project's loop generating the rollouts."""
    _train_ready()
    from debates.strategies.factguard import FactGuardConfig
    from debates.config_loader import load_config
    from debates.strategies.factguard.training.grpo import GRPOSettings, train_grpo
    from debates.strategies.factguard.training.local_model import prepare_local_model
    from m3d_agents.datasets import load_dataset, parse_option_pairs
    from m3d_agents.errors import InputError

    try:
        loaded = load_dataset(dataset, parse_option_pairs(dataset_option))
        chosen = load_config(config)
    except InputError as exc:
        fail(str(exc))
    samples = loaded.samples[:limit] if limit else loaded.samples
    if not isinstance(chosen, FactGuardConfig):
        fail(f"--config {config}: GRPO trains the factguard strategy, not {chosen.strategy}")
    settings = GRPOSettings(num_generations=num_generations, max_completion_length=max_completion_length, max_steps=max_steps)
    trainer = train_grpo(model or prepare_local_model(), samples, chosen, out, settings)
    trainer.save_model(str(out))
    console.print(f"{out}: {trainer.state.global_step} steps")
