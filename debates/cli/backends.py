"""``m3d backends``: which backends are configured, and whether each one answers."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import typer

from debates.cli.common import console, print_json
from debates.cli.tables import print_fitting
from m3d_agents.backends.config import load_backend_settings, resolve_backend_name
from m3d_agents.backends.transports.retry import NO_KEY
from m3d_agents.errors import BackendError, InputError
from m3d_agents.redaction import redact


def backends(
    config_file: Optional[Path] = typer.Option(None, "--config-file", help="YAML file with named backends."),
    as_json: bool = typer.Option(False, "--json", help="Print the backends and their state as JSON."),
) -> None:
    """List the configured backends and whether each one answers.

    Each probe carries that backend's own key and nothing else (no key at all for one that has
    none), the same ``Authorization`` its model calls send, so the probe tests what the calls will meet.
    """
    import httpx

    from m3d_agents.backends.local_server import local_base_url

    settings = load_backend_settings(config_file)
    default = resolve_backend_name(None, settings)
    rows: list[dict[str, Any]] = []
    for name in settings.names():
        config = settings.get(name)
        status = "no answer"
        url = config.endpoint()
        key = config.api_key()
        try:
            if config.spec.requires_key and not key:
                status = f"no key in {config.key_env}"
            else:
                if url is None:
                    url = local_base_url(config.local)
                headers = {"Authorization": f"Bearer {key or NO_KEY}"}
                response = httpx.get(f"{url}/models", timeout=5.0, headers=headers, follow_redirects=False)
                status = "answers" if response.status_code == 200 else f"HTTP {response.status_code}"
        except (httpx.HTTPError, BackendError, InputError) as exc:
            status = redact(f"no answer ({type(exc).__name__}: {str(exc).splitlines()[0][:80] if str(exc) else ''})")
            if isinstance(exc, httpx.ConnectError) and config.restart_wait_s:
                status += f"; a call waits up to {config.restart_wait_s:g} s for it to start (restart_wait_s)"
        rows.append({"name": name, "kind": config.kind, "model": config.model_name, "url": redact(url) if url else url, "status": status,
                     "default": name == default, "restart_wait_s": config.restart_wait_s})
    if as_json:
        print_json(rows)
        return
    # A table where it fits; otherwise one block per backend, so a URL or a model name is never cut (80 columns, a pipe).
    print_fitting(["backend", "kind", "model", "url", "status"], [
        [row["name"] + (" (default)" if row["default"] else ""), row["kind"], row["model"], str(row["url"]), row["status"]]
        for row in rows
    ], to=console)


