"""Building AutoGen chat-completion clients for each backend.

The built-in kinds (:mod:`m3d_agents.backends.kinds`) all speak the OpenAI chat-completions API;
they differ only in URL, key, ``model_info`` and how structured output is requested. The client is our lean
:class:`~m3d_agents.backends.transports.lean_http.OpenAICompatibleClient` (``transport: http``, the default)
or AutoGen's ``OpenAIChatCompletionClient`` over the OpenAI SDK (``transport: sdk``,
:class:`~m3d_agents.backends.transports.sdk.SdkClient`). Both keep one contract, held by one
conformance suite: the same request bodies, the same retries (408, 409, 429, 5xx, bodies that are
not JSON, connection errors, timeouts; ``transport_retries``) and the same error types.
"""

from __future__ import annotations

import asyncio
from typing import Any

from autogen_core.models import ChatCompletionClient, ModelInfo
from pydantic import BaseModel

from m3d_agents.backends.config import BackendConfig, BackendSettings, default_cache_root, resolve_backend_name
from m3d_agents.backends.kinds import ClientSettings
from m3d_agents.backends.lazy_client import LazyClient
from m3d_agents.backends.local_server import local_base_url
from m3d_agents.backends.metering import MeteredClient, UsageLedger
from m3d_agents.backends.transports.schemas import structured_create_args
from m3d_agents.errors import BackendError


def model_info_for(config: BackendConfig) -> ModelInfo:
    return config.spec.model_info(config.has_vision)


class Backend:
    """A configured model endpoint shared by all agents of a process.

    ``client`` is the cached OpenAI-compatible client; agents never call it directly but through
    :meth:`view`, which adds the concurrency limit, the per-call timeout and per-sample accounting.
    """

    def __init__(self, name: str, config: BackendConfig, client: ChatCompletionClient) -> None:
        self.name = name
        self.config = config
        self.client = client
        self._semaphore: asyncio.Semaphore | None = None
        self._slot: asyncio.Semaphore | None = None

    @property
    def semaphore(self) -> asyncio.Semaphore:
        if self._semaphore is None:
            self._semaphore = asyncio.Semaphore(self.config.concurrency)
        return self._semaphore

    @property
    def slot(self) -> asyncio.Semaphore | None:
        """The server's own limit, inside the concurrency gate: a call's deadline starts once it holds a slot,
        so time spent waiting for a single-slot server to finish another call is never counted against it."""
        slots = self.config.slots
        if slots is not None and self._slot is None:
            self._slot = asyncio.Semaphore(slots)
        return self._slot

    def gate_calls(self, gate: Any) -> None:
        """Replace the concurrency semaphore by another async context manager (e.g. a rate limit) that wraps it."""
        self._semaphore = gate

    @property
    def takes_grammar(self) -> bool:
        """Whether the server decodes under a grammar (:mod:`m3d_agents.grammars`); without, one is never sent."""
        return self.config.grammar_field != "none"

    @property
    def bounds_prose(self) -> bool:
        """Whether the free prose of a format decoded under a grammar is bounded (the embedded model's few sentences)."""
        return self.takes_grammar and self.config.shaping().prose_sentences is not None

    @property
    def vision(self) -> bool:
        return bool(self.client.model_info["vision"])

    @property
    def call_deadline_s(self) -> float:
        """The most one whole call may take (the config's ``deadline_s``), plus a local server's start when it has yet to start."""
        lazy = self.client if isinstance(self.client, LazyClient) else getattr(self.client, "client", None)
        return self.config.call_deadline_s(starts_server=isinstance(lazy, LazyClient) and not lazy.built)

    def view(self, ledger: UsageLedger, agent: str, role: str) -> MeteredClient:
        return MeteredClient(self.client, self.semaphore, ledger, agent, role, self.call_deadline_s, self.name, slot=self.slot)

    def structured_args(self, schema: type[BaseModel]) -> dict[str, Any]:
        # OpenAI's strict mode rejects some keywords (maxLength); vLLM enforces the full schema.
        return structured_create_args(self.client.model_info, schema, strict=self.config.spec.strict_schemas)

    async def close(self) -> None:
        await self.client.close()


def _client(config: BackendConfig, base_url: str | None) -> ChatCompletionClient:
    """The chat client of ``config``'s kind at ``base_url``."""
    kind = config.spec
    return kind.client(ClientSettings(
        base_url=base_url, model=config.model_name, model_info=model_info_for(config), api_key=config.api_key(),
        temperature=config.temperature, max_tokens=config.max_tokens, seed=config.seed, timeout_s=config.timeout_s,
        max_retries=config.transport_retries, restart_wait_s=config.restart_wait_s, context_window=config.local.n_ctx if kind.embedded else None,
        shaping=config.shaping(), max_answer_bytes=config.max_answer_bytes, transport=config.transport, config=config,
    ))


def _with_cache(config: BackendConfig, client: ChatCompletionClient) -> ChatCompletionClient:
    if not config.cache:
        return client
    from m3d_agents.backends.checkpoint import CheckpointProbe
    from m3d_agents.backends.response_cache import ResponseCache
    from m3d_agents.backends.response_store import JsonResponseStore

    root = config.cache_dir or default_cache_root() / "responses"
    endpoint = config.endpoint()
    # A vLLM server's weights change behind one name; a user-named checkpoint is already in the fingerprint.
    probe = CheckpointProbe(endpoint, config.model_name, config.api_key()) \
        if config.spec.probes_checkpoint and config.checkpoint is None and endpoint else None
    return ResponseCache(client, JsonResponseStore(root / config.fingerprint()), probe)


def build_backend(config: BackendConfig, name: str | None = None) -> Backend:
    """Return a ready backend; fails fast with a clear message when it cannot work at all."""
    name = name or config.kind
    if config.spec.requires_key and not config.api_key():
        raise BackendError(f"backend {name!r} ({config.kind}) needs an API key in the environment variable {config.key_env}")
    base_url = config.endpoint()
    if base_url is None and config.spec.embedded:
        # The embedded server has no endpoint until it runs: it starts on the first call.
        client: ChatCompletionClient = LazyClient(lambda: _client(config, local_base_url(config.local)), model_info_for(config))
    else:
        client = _client(config, base_url)
    return Backend(name, config, _with_cache(config, client))


class BackendPool:
    """Backends by name, built on first use, so that a run only starts the servers it needs."""

    def __init__(self, settings: BackendSettings | None = None, overrides: dict[str, BackendConfig] | None = None) -> None:
        self.settings = settings or BackendSettings()
        self.overrides = overrides or {}
        self._backends: dict[str, Backend] = {}

    @property
    def default_backend(self) -> str:
        """The backend for seats that name none: ``M3D_BACKEND``, else the config file's, else ``local``."""
        return resolve_backend_name(None, self.settings)

    def config(self, name: str) -> BackendConfig:
        return self.overrides.get(name) or self.settings.get(name)

    def get(self, name: str, model: str | None = None) -> Backend:
        """The backend called ``name``; with ``model``, the same endpoint serving another model."""
        key = f"{name}:{model}" if model else name
        if key not in self._backends:
            config = self.config(name)
            if model:
                config = config.with_overrides(model=model)
            self._backends[key] = build_backend(config, key)
        return self._backends[key]

    def add(self, backend: Backend) -> None:
        self._backends[backend.name] = backend

    def names(self) -> list[str]:
        """Every backend a call may name: the configured ones and any added to the pool."""
        return list(dict.fromkeys([*self.settings.names(), *self.overrides, *self._backends]))

    async def close(self) -> None:
        for backend in self._backends.values():
            await backend.close()
        self._backends.clear()
