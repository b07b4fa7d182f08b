"""The ``m3d`` command line."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Optional

import httpx
import typer
from rich.console import Console
from rich.table import Table

from m3d_agents.backends.config import load_backend_settings, resolve_backend_name
from m3d_agents.backends.factory import BackendPool
from m3d_agents.errors import BackendError, InputError
from m3d_agents.sample import Sample, SampleMetadata
from m3d_agents.verdict import Verdict

app = typer.Typer(add_completion=False, no_args_is_help=True, help="Multimodal misinformation detection by debating agents.")
console = Console()
err_console = Console(stderr=True)


def fail(message: str, code: int = 2) -> None:
    err_console.print(f"[bold red]error:[/] {message}")
    raise typer.Exit(code)


def build_sample(
    text: str, images: list[Path], taxonomy: str, claim_date: str | None, language: str | None, source_url: str | None
) -> Sample:
    from pydantic import ValidationError

    try:
        return Sample(
            text=text,
            images=images,
            taxonomy=taxonomy,
            metadata=SampleMetadata.model_validate(
                {"claim_date": claim_date, "language": language, "source_url": source_url}
            ),
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "sample"
        raise InputError(field, first["msg"]) from exc


def print_verdict(verdict: Verdict, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(verdict.model_dump_json(indent=2) + "\n")
        return
    if verdict.abstained:
        console.print(f"[bold yellow]ABSTAINED[/]: {verdict.abstain_reason}")
    else:
        colour = "red" if verdict.is_misinformation else "green"
        confidence = f"{verdict.confidence:.2f}" if verdict.confidence is not None else "n/a"
        console.print(
            f"[bold {colour}]{verdict.label}[/] (misinformation: {verdict.is_misinformation}, confidence {confidence})"
        )
        if verdict.rationale:
            console.print(verdict.rationale)
    acc = verdict.accounting
    console.print(
        f"[dim]{verdict.config} on {verdict.backend}: {acc.model_calls} model calls, "
        f"{acc.prompt_tokens}+{acc.completion_tokens} tokens, {acc.cache_hits} cache hits, "
        f"wall {verdict.diagnostics.get('wall_time_s', 0):.2f}s[/]"
    )


@app.command()
def check(
    text: str = typer.Option(..., "--text", help="The caption, claim or post text."),
    image: list[Path] = typer.Option([], "--image", help="An image of the post; repeat for several."),
    backend: Optional[str] = typer.Option(None, "--backend", help="local, vllm, openai, or a name from the config file."),
    config_file: Optional[Path] = typer.Option(None, "--config-file", help="YAML file with named backends."),
    taxonomy: str = typer.Option("binary", "--taxonomy", help="Label set of the answer."),
    claim_date: Optional[str] = typer.Option(None, "--claim-date", help="YYYY-MM-DD"),
    language: Optional[str] = typer.Option(None, "--language"),
    source_url: Optional[str] = typer.Option(None, "--source-url"),
    as_json: bool = typer.Option(False, "--json", help="Print the Verdict as JSON."),
) -> None:
    """Check one post with a single agent and print its verdict."""
    from debates.check import check_sample

    async def main() -> Verdict:
        settings = load_backend_settings(config_file)
        name = resolve_backend_name(backend, settings)
        pool = BackendPool(settings)
        try:
            sample = build_sample(text, image, taxonomy, claim_date, language, source_url)
            return await check_sample(sample, pool, name)
        finally:
            await pool.close()

    print_verdict(run_cli(main()), as_json)


def run_cli(coro):  # type: ignore[no-untyped-def]
    """Run a command and turn the errors users can fix into one clear line each."""
    try:
        return asyncio.run(coro)
    except InputError as exc:
        fail(str(exc))
    except BackendError as exc:
        fail(str(exc))
    except Exception as exc:  # noqa: BLE001 - the last line of defence for a CLI
        from openai import APIConnectionError, APIStatusError, APITimeoutError

        if isinstance(exc, (APIConnectionError, APITimeoutError)):
            fail(f"the model endpoint did not answer: {exc}")
        if isinstance(exc, APIStatusError):
            fail(f"the model endpoint refused the request ({exc.status_code}): {exc.message}")
        raise


@app.command()
def backends(
    config_file: Optional[Path] = typer.Option(None, "--config-file"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """List the configured backends and whether each one answers."""
    import os

    from m3d_agents.backends.local_server import local_base_url

    settings = load_backend_settings(config_file)
    default = resolve_backend_name(None, settings)
    rows = []
    for name in settings.names():
        config = settings.get(name)
        status = "no answer"
        url = config.base_url
        try:
            if config.kind == "openai" and not os.environ.get(config.api_key_env):
                status = f"no key in {config.api_key_env}"
            else:
                if config.kind == "local" and not url:
                    url = local_base_url(config.local)
                elif config.kind == "vllm" and not url:
                    url = os.environ.get("M3D_VLLM_BASE_URL", "http://127.0.0.1:8000/v1")
                elif config.kind == "openai" and not url:
                    url = "https://api.openai.com/v1"
                headers = {"Authorization": f"Bearer {os.environ.get(config.api_key_env, 'EMPTY')}"}
                response = httpx.get(f"{url}/models", timeout=5.0, headers=headers)
                status = "answers" if response.status_code == 200 else f"HTTP {response.status_code}"
        except (httpx.HTTPError, BackendError) as exc:
            status = f"no answer ({type(exc).__name__}: {str(exc).splitlines()[0][:80] if str(exc) else ''})"
        rows.append({"name": name, "kind": config.kind, "model": config.model_name, "url": url, "status": status,
                     "default": name == default})
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    table = Table("backend", "kind", "model", "url", "status")
    for row in rows:
        table.add_row(row["name"] + (" (default)" if row["default"] else ""), row["kind"], row["model"], str(row["url"]), row["status"])
    console.print(table)


def main() -> None:
    """Entry point of ``m3d`` and ``python -m debates``."""
    app()


# Commands that live in their own modules register themselves on `app` when imported here
# (one import per feature area; keep this list sorted).
from debates import cli_debate, cli_evaluate, cli_evidence, cli_tools  # noqa: E402,F401
