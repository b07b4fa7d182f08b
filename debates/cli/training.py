"""``m3d export-sft`` and ``m3d train``: training data from recorded runs, and GRPO/SFT on TRL (extra ``train``).

Every setting of a training run is a field of :class:`~debates.strategies.factguard.training.grpo.GRPOSettings`
or :class:`~debates.strategies.factguard.training.sft.SFTSettings`; ``--settings FILE`` reads them from
YAML, and each option below overrides its field. The paper's ablations are options: α, γ, λ, r⁺, r⁻,
the format gate, G and β.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from debates.cli.common import console, evidence_store_option, fail, retrieval_option, run_cli, written_path

train_app = typer.Typer(no_args_is_help=True, help="Train a model with the FactGuard rewards (needs the 'train' extra).")


def export_sft_command(
    run_dir: Path = typer.Argument(..., help="A run folder written by m3d evaluate --record-trajectories."),
    out: Path = typer.Option(..., "--out", parser=written_path, help="The JSONL file to write."),
    fmt: str = typer.Option("hf", "--format", help="hf (TRL conversational) or llamafactory."),
    review: int = typer.Option(20, "--review", min=0, help="Rows copied to <out>.review.jsonl for a manual check."),
) -> None:
    """Export the trajectories of a run as SFT data, keeping only well-formed, right answers with valid tool calls."""
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


def _settings(model: type[Any], path: Path | None, overrides: dict[str, Any]) -> Any:
    """The settings file (if any) with the given options (dotted field names) laid over it, validated; one line on error.

    ``{}`` as a value makes sure a section exists (``--lora`` with the adapter's defaults).
    """
    from pydantic import ValidationError

    from m3d_agents.errors import InputError
    from m3d_agents.safe_yaml import load_yaml

    data: dict[str, Any] = {}
    if path is not None:
        if not path.is_file():
            fail(f"--settings: {path} does not exist")
        try:
            loaded = load_yaml(path.read_text(encoding="utf-8"), str(path))
        except InputError as exc:
            fail(str(exc))
        if not isinstance(loaded, dict):
            fail(f"--settings: {path} is not a mapping of settings")
        data = loaded
    for dotted, value in overrides.items():
        target = data
        *parents, leaf = dotted.split(".")
        for parent in parents:
            if not isinstance(target.get(parent), dict):
                target[parent] = {}
            target = target[parent]
        if value == {} and isinstance(target.get(leaf), dict):
            continue
        target[leaf] = value
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        fail(str(InputError.from_validation(exc, str(path) if path else "the options")))


def given(**values: Any) -> dict[str, Any]:
    """The options that were given, under their dotted field names (``reward__alpha`` is ``reward.alpha``)."""
    return {name.replace("__", "."): value for name, value in values.items() if value is not None}


def _departures(departures: list[Any]) -> None:
    """Print where the run departs from the paper, before its first step."""
    if not departures:
        console.print("departures from the paper: none in these settings", highlight=False)
        return
    console.print(f"departures from the paper ({len(departures)}; saved with the trained weights in departures.json):",
                  highlight=False)
    for departure in departures:
        console.print(f"  {departure.line()}", markup=False, highlight=False, soft_wrap=True)


def _save_departures(out: Any, departures: list[Any]) -> None:
    """The departures beside the trained weights (``out``, the run's owned folder), so the model carries them."""
    out.write_json("departures.json", [d.model_dump() for d in departures])


def _check_memory(model_dir: Path, scale: Any, workload: Any, *, reference: bool, generations: Optional[int], force: bool) -> None:
    """Estimate the peak per GPU from the model's configuration and compare it with the free memory, before loading."""
    from transformers import AutoConfig

    from debates.strategies.factguard.training.memory import check_memory

    try:
        config = AutoConfig.from_pretrained(str(model_dir))
    except (OSError, ValueError) as exc:
        fail(f"--model: {model_dir} has no readable config.json ({' '.join(str(exc).split())[:200]})")
    check = check_memory(config, scale, workload, reference=reference, generations=generations)
    console.print(check.report(), markup=False, highlight=False, soft_wrap=True)
    if not check.fits:
        if not force:
            fail(check.refusal())
        console.print("memory: --force given, starting anyway", highlight=False)


def _scale(dtype: Optional[str], checkpointing: Optional[bool], attn: Optional[str], lora: Optional[bool], lora_r: Optional[int],
           lora_alpha: Optional[int]) -> dict[str, Any]:
    values = given(scale__dtype=dtype, scale__gradient_checkpointing=checkpointing, scale__attn_implementation=attn)
    if lora is False:
        values["scale.lora"] = None
    elif lora or lora_r is not None or lora_alpha is not None:
        values["scale.lora"] = {}
        values.update(given(scale__lora__r=lora_r, scale__lora__alpha=lora_alpha))
    return values


DTYPE_HELP = "auto (bf16 on a GPU that has it, the paper's; fp32 on CPU), bf16, fp16 or fp32."
ATTN_HELP = "Attention kernel: flash_attention_2 (the paper's FlashAttention; needs flash-attn), sdpa or eager."
LORA_HELP = "Train a LoRA adapter (peft) instead of all weights: fits a 7B model on one GPU (ours; the paper trains all)."
FORCE_HELP = "Start even when the estimated peak GPU memory is over the free memory of the GPU (checked before the model loads)."
TEMPLATE_HELP = "A Jinja chat template with {% generation %} marks, for a model whose own has none and that TRL does not know."


@train_app.command("prepare-local-model")
def prepare_local_model_command(
    out: Optional[Path] = typer.Option(None, "--out", parser=written_path, help="Folder to write; default: the cache."),
    force: bool = typer.Option(False, "--force", help="Convert again even if the folder exists."),
) -> None:
    """Convert the embedded 270M GGUF model to a trainable folder with a chat template (once)."""
    _train_ready()
    from debates.strategies.factguard.training.local_model import prepare_local_model

    console.print(str(prepare_local_model(out, force)))


@train_app.command("accelerate-config")
def accelerate_config_command(
    zero: int = typer.Option(3, "--zero", min=2, max=3, help="DeepSpeed ZeRO stage: 3 shards weights too (the 8-GPU setting), 2 shards optimizer states and gradients."),
) -> None:
    """Print the path of the shipped accelerate config for 8 GPUs under DeepSpeed: accelerate launch --config_file PATH -m debates train ..."""
    from importlib import resources

    console.print(str(resources.files("debates.strategies.factguard.training") / "accelerate" / f"zero{zero}.yaml"), soft_wrap=True)


@train_app.command("sft")
def sft_command(
    data: Path = typer.Option(..., "--data", help="JSONL from m3d export-sft (hf format)."),
    model: Optional[Path] = typer.Option(None, "--model", help="A transformers model folder; default: the embedded model."),
    out: Path = typer.Option(Path("runs/sft"), "--out", parser=written_path, help="Folder of the trained adapter and its logs."),
    settings_file: Optional[Path] = typer.Option(None, "--settings", help="YAML of SFT settings; options override it."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", help="Stop after this many optimiser steps; default: the configuration's."),
    learning_rate: Optional[float] = typer.Option(None, "--learning-rate", help="Default: the configuration's."),
    accumulation: Optional[int] = typer.Option(None, "--gradient-accumulation", min=1, help="Batches per optimiser step; default: the configuration's."),
    dtype: Optional[str] = typer.Option(None, "--dtype", help=DTYPE_HELP),
    checkpointing: Optional[bool] = typer.Option(None, "--gradient-checkpointing/--no-gradient-checkpointing", help="Trade compute for memory; default: the configuration's."),
    attn: Optional[str] = typer.Option(None, "--attn", help=ATTN_HELP),
    lora: Optional[bool] = typer.Option(None, "--lora/--no-lora", help=LORA_HELP),
    lora_r: Optional[int] = typer.Option(None, "--lora-r", min=1, help="LoRA rank; default: the configuration's."),
    lora_alpha: Optional[int] = typer.Option(None, "--lora-alpha", min=1, help="LoRA alpha; default: the configuration's."),
    chat_template: Optional[Path] = typer.Option(None, "--chat-template", help=TEMPLATE_HELP),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """Supervised fine-tuning on exported trajectories (the model's own tokens only; images through the processor)."""
    _train_ready()
    from debates.strategies.factguard.training.local_model import prepare_local_model
    from debates.strategies.factguard.training.sft import SFTSettings, plan_sft, train_sft
    from m3d_agents.errors import InputError
    from m3d_agents.safe_files import OwnedFolder

    settings = _settings(SFTSettings, settings_file, {
        **given(max_steps=max_steps, learning_rate=learning_rate, gradient_accumulation_steps=accumulation),
        **_scale(dtype, checkpointing, attn, lora, lora_r, lora_alpha),
    })
    scale = settings.scale
    console.print(f"SFT: lr={settings.learning_rate}, accumulation {settings.gradient_accumulation_steps}, "
                  f"{'LoRA r=' + str(scale.lora.r) if scale.lora else 'all weights'}, {scale.resolved_dtype()}", highlight=False)
    try:
        plan = plan_sft(model or prepare_local_model(), data, settings, chat_template=chat_template)
        _departures(plan.departures)
        _check_memory(plan.model_dir, scale, plan.workload, reference=False, generations=None, force=force)
        with OwnedFolder(out).staging() as staged:
            trainer = train_sft(plan.model_dir, data, staged, settings, plan=plan)
            trainer.save_model(str(staged))
        _save_departures(OwnedFolder(out), plan.departures)
    except InputError as exc:
        fail(str(exc))
    console.print(f"{out}: {trainer.state.global_step} steps")


@train_app.command("grpo")
def grpo_command(
    dataset: str = typer.Option(..., "--dataset", help="KIND:PATH of labelled video posts."),
    dataset_option: list[str] = typer.Option([], "--dataset-option", "-o", help="key=value for the loader; repeat."),
    config: str = typer.Option("factguard", "--config", help="The configuration whose agent is trained."),
    model: Optional[Path] = typer.Option(None, "--model", help="A transformers model folder; default: the embedded model."),
    out: Path = typer.Option(Path("runs/grpo"), "--out", parser=written_path, help="Folder of the trained adapter and its logs."),
    limit: Optional[int] = typer.Option(None, "--limit", min=1, help="Train on the first N samples."),
    settings_file: Optional[Path] = typer.Option(None, "--settings", help="YAML of GRPO settings; options override it."),
    max_steps: Optional[int] = typer.Option(None, "--max-steps", help="Stop after this many optimiser steps; default: the configuration's."),
    num_generations: Optional[int] = typer.Option(None, "--num-generations", "-G", min=2, help="G, rollouts per prompt (paper: 8)."),
    beta: Optional[float] = typer.Option(None, "--beta", min=0, help="β, the KL coefficient (paper: 0.04)."),
    learning_rate: Optional[float] = typer.Option(None, "--learning-rate", help="Paper: 1e-6."),
    alpha: Optional[float] = typer.Option(None, "--alpha", help="α, the cost of a false positive (paper: α:γ = 1:1)."),
    gamma: Optional[float] = typer.Option(None, "--gamma", help="γ, the cost of a false negative."),
    lam: Optional[float] = typer.Option(None, "--lambda", "--lam", help="λ, the risk term's weight; 0 is 'w/o R_risk'."),
    r_tool_pos: Optional[float] = typer.Option(None, "--r-tool-pos", help="r⁺, the tool reward of a right answer; 0 with --r-tool-neg 0 is 'w/o R_tool'."),
    r_tool_neg: Optional[float] = typer.Option(None, "--r-tool-neg", help="r⁻, the tool penalty of a wrong answer."),
    format_gate: Optional[bool] = typer.Option(None, "--format-gate/--no-format-gate", help="Multiply the reward by R_format (ours)."),
    max_completion_length: Optional[int] = typer.Option(None, "--max-completion-length", min=8, help="Tokens per model turn (paper: 768)."),
    max_prompt_length: Optional[int] = typer.Option(None, "--max-prompt-length", min=64, help="First-prompt cap; longer samples are left out (paper: 16,384)."),
    dtype: Optional[str] = typer.Option(None, "--dtype", help=DTYPE_HELP),
    checkpointing: Optional[bool] = typer.Option(None, "--gradient-checkpointing/--no-gradient-checkpointing", help="Trade compute for memory; default: the configuration's."),
    attn: Optional[str] = typer.Option(None, "--attn", help=ATTN_HELP),
    lora: Optional[bool] = typer.Option(None, "--lora/--no-lora", help=LORA_HELP),
    lora_r: Optional[int] = typer.Option(None, "--lora-r", min=1, help="LoRA rank; default: the configuration's."),
    lora_alpha: Optional[int] = typer.Option(None, "--lora-alpha", min=1, help="LoRA alpha; default: the configuration's."),
    vllm_server: Optional[str] = typer.Option(None, "--vllm-server", help="URL of a `trl vllm-serve` server for rollouts; default: HF generate."),
    rollout_batch_size: Optional[int] = typer.Option(
        None, "--rollout-batch-size", min=1, help="HF generate: the most rollout turns generated in one batched call "
        "(default 8; 1: one rollout at a time; the tokens are the same, a larger batch holds more memory)."),
    tool_use: Optional[str] = typer.Option(
        None, "--tool-use", help="Which tool calls R_tool counts: called (every call made, the paper's) or answered "
        "(only calls that ran and answered; ours)."),
    chat_template: Optional[Path] = typer.Option(None, "--chat-template", help=TEMPLATE_HELP),
    retrieval: Optional[str] = retrieval_option(),
    evidence_store: Optional[Path] = evidence_store_option(),
    force: bool = typer.Option(False, "--force", help=FORCE_HELP),
) -> None:
    """GRPO with the FactGuard rewards, the project's loop generating the rollouts (FactProbe searching through --retrieval)."""
    _train_ready()
    from debates.config_loader import load_config
    from debates.session import RunSession
    from debates.strategies.factguard.config import FactGuardConfig
    from debates.strategies.factguard.training.grpo import GRPOSettings, plan_grpo, train_grpo
    from debates.strategies.factguard.training.local_model import prepare_local_model
    from m3d_agents.backends.factory import BackendPool
    from m3d_agents.datasets import load_dataset, parse_option_pairs
    from m3d_agents.errors import InputError
    from m3d_agents.safe_files import OwnedFolder
    from retrieval.runpath import parse_mode

    settings = _settings(GRPOSettings, settings_file, {
        **given(max_steps=max_steps, num_generations=num_generations, beta=beta, learning_rate=learning_rate,
                reward__alpha=alpha, reward__gamma=gamma, reward__lam=lam, reward__r_tool_pos=r_tool_pos,
                reward__r_tool_neg=r_tool_neg, reward__format_gate=format_gate, reward__tool_use=tool_use,
                max_completion_length=max_completion_length, max_prompt_length=max_prompt_length, vllm_server=vllm_server,
                rollout_batch_size=rollout_batch_size),
        **_scale(dtype, checkpointing, attn, lora, lora_r, lora_alpha),
    })
    try:
        loaded = load_dataset(dataset, parse_option_pairs(dataset_option))
        chosen = load_config(config)
        if not isinstance(chosen, FactGuardConfig):
            raise InputError("config", f"GRPO trains the factguard strategy, not {chosen.strategy}")
    except InputError as exc:
        fail(str(exc))
    samples = loaded.samples[:limit] if limit else loaded.samples
    r, scale = settings.reward, settings.scale
    rollouts = f"vLLM server {settings.vllm_server}" if settings.vllm_server else f"HF generate, batches of {settings.rollout_batch_size}"
    console.print(f"GRPO: G={settings.num_generations}, beta={settings.beta}, lr={settings.learning_rate}, alpha={r.alpha}, "
                  f"gamma={r.gamma}, lambda={r.lam}, r+={r.r_tool_pos}, r-={r.r_tool_neg} (tool calls counted: {r.tool_use}), "
                  f"format gate {'on' if r.format_gate else 'off'}; {'LoRA r=' + str(scale.lora.r) if scale.lora else 'all weights'}, "
                  f"{scale.resolved_dtype()}; rollouts on {rollouts}", highlight=False, soft_wrap=True)
    try:
        plan = plan_grpo(model or prepare_local_model(), samples, chosen, settings, chat_template=chat_template)
    except InputError as exc:
        fail(str(exc))
    console.print(f"prompt cap: {len(plan.fit.kept)} of {len(samples)} samples fit in {settings.max_prompt_length:,} tokens "
                  f"(longest first prompt kept: {plan.fit.longest} tokens)", highlight=False)
    _departures(plan.departures)
    _check_memory(plan.model_dir, scale, plan.workload, reference=settings.beta > 0, generations=settings.num_generations, force=force)
    try:
        # The rollouts run in this session; its pool takes the policy as the ``policy`` backend at every step.
        session = RunSession(chosen, BackendPool(), backend="policy", retrieval=parse_mode(retrieval), evidence_store=evidence_store)
        run_cli(session.open())
    except InputError as exc:
        fail(str(exc))
    sources = session.sources
    log = sources.log
    not_run = "; ".join(f"{name} not run ({why})" for name, why in (log.not_run if log else {}).items())
    console.print(f"FactProbe: retrieval {sources.mode}{' (' + log.note + ')' if log and log.note else ''}"
                  f"{'; ' + not_run if not_run else ''}")
    try:
        with OwnedFolder(out).staging() as staged:
            run = train_grpo(plan.model_dir, samples, chosen, staged, settings, session=session, plan=plan)
            run.trainer.save_model(str(staged))
        _save_departures(OwnedFolder(out), plan.departures)
    except InputError as exc:
        fail(str(exc))
    console.print(f"{out}: {run.trainer.state.global_step} steps ({run.template.source})")
