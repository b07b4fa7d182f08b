"""``m3d backends``: which backends are configured, and whether each one answers."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Optional

import httpx
import typer
from rich.table import Table

from debates.cli.common import console
from m3d_agents.backends.config import BackendConfig, load_backend_settings, resolve_backend_name
from m3d_agents.errors import BackendError, InputError
from m3d_agents.redaction import redact


def probe_key(config: BackendConfig) -> str | None:
    """The key this backend's own calls send, and nothing else: the embedded server gets none, and a
    vLLM server gets ``M3D_VLLM_API_KEY`` (or the variable its config names), never OpenAI's key."""
    import os

    if config.kind == "local":
        return None
    if config.kind == "vllm" and "api_key_env" not in config.model_fields_set:
        return os.environ.get("M3D_VLLM_API_KEY") or None
    return os.environ.get(config.api_key_env) or None


def backends(
    config_file: Optional[Path] = typer.Option(None, "--config-file"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """List the configured backends and whether each one answers."""
    import os

    from m3d_agents.backends.local_server import local_base_url

    settings = load_backend_settings(config_file)
    default = resolve_backend_name(None, settings)
    rows: list[dict[str, Any]] = []
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
                key = probe_key(config)
                headers = {"Authorization": f"Bearer {key}"} if key else {}
                response = httpx.get(f"{url}/models", timeout=5.0, headers=headers, follow_redirects=False)
                status = "answers" if response.status_code == 200 else f"HTTP {response.status_code}"
        except (httpx.HTTPError, BackendError, InputError) as exc:
            status = redact(f"no answer ({type(exc).__name__}: {str(exc).splitlines()[0][:80] if str(exc) else ''})")
        rows.append({"name": name, "kind": config.kind, "model": config.model_name, "url": redact(url) if url else url, "status": status,
                     "default": name == default})
    if as_json:
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
        return
    table = Table("backend", "kind", "model", "url", "status")
    for row in rows:
        table.add_row(row["name"] + (" (default)" if row["default"] else ""), row["kind"], row["model"], str(row["url"]), row["status"])
    console.print(table)


