"""Backend configuration, and where it is read from.

Precedence, highest first: a command-line flag, the ``M3D_BACKEND`` environment variable, the
config file (``--config-file``, ``M3D_CONFIG``, ``./m3d.yaml`` or ``~/.config/m3d/config.yaml``),
and finally the embedded ``local`` default, which needs no GPU and no key.
"""

from __future__ import annotations

import hashlib
import json
import os
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
    api_key_env: str = "OPENAI_API_KEY"
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

    def fingerprint(self) -> str:
        """A hash of every setting that changes an answer: one response cache per fingerprint."""
        relevant = {
            "kind": self.kind,
            "model": self.model_name,
            "base_url": self.base_url,
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            "local_model": str(self.local.model_path) if self.kind == "local" else None,
            "n_ctx": self.local.n_ctx if self.kind == "local" else None,
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
