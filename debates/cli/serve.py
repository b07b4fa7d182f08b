"""``m3d serve``: the web page for people (live debates with a seat, review of run folders, the user study)."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from typing import Optional

import typer

from debates.cli.common import console, err_console, evidence_store_option, fail, retrieval_option, run_cli, written_path

TOKEN_VARIABLE = "M3D_SERVE_TOKEN"


def _token(host: str, token_file: Path) -> tuple[str | None, str]:
    """The access token and how the person gets it: the environment's, or a new one written to a private file."""
    from debates.ui.web.security import is_loopback

    given = os.environ.get(TOKEN_VARIABLE)
    if given:
        return given, f"the token is the value of {TOKEN_VARIABLE}"
    if is_loopback(host):
        return None, "loopback only, no token"
    token = secrets.token_urlsafe(24)
    token_file.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(token + "\n")
    return token, f"the token is in {token_file} (readable by you only); open the page once with ?token=<that token>"


def serve(
    host: str = typer.Option("127.0.0.1", "--host", help="Address to bind; anything but loopback needs a token."),
    port: int = typer.Option(8765, "--port", min=1, max=65535, help="The port to serve on."),
    runs: list[Path] = typer.Option([], "--runs", help="A folder of run folders the review page may open; repeat."),
    dataset: list[str] = typer.Option([], "--dataset", help="KIND:PATH of posts to pick from (live page, study); repeat."),
    dataset_option: list[str] = typer.Option([], "--dataset-option", "-o", help="key=value for every data set's loader."),
    replay_mr2: Optional[Path] = typer.Option(
        None, "--replay-mr2", help="An MR2 trace: its claims become a data set, debated with their recorded evidence."),
    retrieval: Optional[str] = retrieval_option(),
    evidence_store: Optional[Path] = evidence_store_option(),
    backend: Optional[str] = typer.Option(None, "--backend", help="The backend selected by default on the pages."),
    config_file: Optional[Path] = typer.Option(None, "--config-file", help="YAML file with named backends."),
    study_dir: Path = typer.Option(Path("studies"), "--study-dir", parser=written_path, help="Where study answers are saved (JSONL)."),
    max_upload_mb: float = typer.Option(10.0, "--max-upload-mb", min=0.01, max=30.0, help="Largest image upload."),
    max_studies: int = typer.Option(100, "--max-studies", min=1, max=10_000,
                                    help="Study sessions held at once; a new one past this is refused until one expires."),
    study_idle_minutes: float = typer.Option(120.0, "--study-idle-minutes", min=1.0, max=7 * 24 * 60,
                                             help="A study session with no request for this long is dropped (its answers "
                                             "stay saved in --study-dir)."),
    token_file: Path = typer.Option(
        Path.home() / ".config" / "m3d" / "serve-token", "--token-file",
        help=f"Where a generated token is written when bound beyond loopback and {TOKEN_VARIABLE} is unset."),
) -> None:
    """Serve the web page: live debates (take a seat), review of run folders, and the before/after user study."""
    from debates.ui.web.server import build_server, server_logging
    from debates.ui.web.settings import WebSettings
    from m3d_agents.backends.config import load_backend_settings, resolve_backend_name
    from m3d_agents.backends.factory import BackendPool
    from m3d_agents.datasets import load_dataset, parse_option_pairs
    from m3d_agents.sample import InputLimits, Sample
    from retrieval.runpath import parse_mode

    async def prepare() -> WebSettings:
        mode = parse_mode(retrieval)
        backend_settings = load_backend_settings(config_file)
        default = resolve_backend_name(backend, backend_settings)
        backend_settings.get(default)  # an unknown name is an error here, naming the known ones
        names = list(dict.fromkeys([*backend_settings.names(), default]))
        options = parse_option_pairs(dataset_option)
        datasets: dict[str, list[Sample]] = {spec: load_dataset(spec, options).samples for spec in dataset}
        replayed_ids: frozenset[str] = frozenset()
        if replay_mr2 is not None:
            from retrieval.providers.mr2_trace import MR2Trace

            trace = MR2Trace(replay_mr2)
            datasets[f"mr2-replay:{replay_mr2}"] = [trace.sample(i) for i in trace.ids()]
            replayed_ids = frozenset(trace.ids())
        token, how = _token(host, token_file)
        limits = InputLimits()
        settings = WebSettings(
            pool_factory=lambda: BackendPool(backend_settings), backends=names, default_backend=default,
            run_roots=[r.resolve() for r in runs], datasets=datasets, study_dir=study_dir, host=host, token=token,
            max_upload_bytes=int(max_upload_mb * 1_000_000), limits=limits, retrieval=mode, evidence_store=evidence_store,
            replay_mr2=replay_mr2, replayed_ids=replayed_ids, max_study_sessions=max_studies,
            study_idle_s=study_idle_minutes * 60,
        )
        settings.check()
        shown = f"[{host}]" if ":" in host else host
        console.print(f"m3d serve: http://{shown}:{port}/ ({how}); Ctrl-C stops it")
        return settings

    settings = run_cli(prepare())
    with server_logging((settings.token,) if settings.token else ()):
        try:
            build_server(settings, port).run()
        except OSError as exc:
            fail(f"cannot serve on {host}:{port}: {exc.strerror or exc}")
        except KeyboardInterrupt:
            err_console.print("stopped")
