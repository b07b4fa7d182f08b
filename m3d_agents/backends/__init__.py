"""Model backends: one OpenAI-compatible code path for vLLM, OpenAI and the embedded local model.

| module | what |
|---|---|
| :mod:`~m3d_agents.backends.config` | the backend settings (``m3d.yaml``), read without importing any client |
| :mod:`~m3d_agents.backends.factory` | a backend and the pool of a run, built from the settings |
| :mod:`~m3d_agents.backends.metering` | the client every call goes through: concurrency, deadline, accounting |

The package imports none of them, so a command that only reads settings (``m3d backends``,
``m3d config``) does not import the model clients.
"""
