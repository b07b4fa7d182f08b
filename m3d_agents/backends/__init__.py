"""Model backends: one OpenAI-compatible code path for vLLM, OpenAI and the embedded local model."""

from m3d_agents.backends.config import BackendConfig, BackendSettings, load_backend_settings
from m3d_agents.backends.factory import Backend, BackendPool, build_backend
from m3d_agents.backends.metering import MeteredClient, UsageLedger

__all__ = [
    "Backend",
    "BackendConfig",
    "BackendPool",
    "BackendSettings",
    "MeteredClient",
    "UsageLedger",
    "build_backend",
    "load_backend_settings",
]
