"""A backend kind registered from outside m3d-agents: a model whose answers its configuration gives.

It follows the recipe of ``docs/extending.md`` ("A model backend"): a settings model that extends
``BackendConfig`` with the kind's own fields, and a ``BackendKind`` registered with
``@backend_kind`` whose ``client`` returns an AutoGen ``ChatCompletionClient``; the distribution
names the module under the ``m3d_agents.backends`` entry-point group.
"""

from __future__ import annotations

from typing import ClassVar

from autogen_core.models import ChatCompletionClient
from pydantic import BaseModel, Field

from m3d_agents.backends.config import BackendConfig
from m3d_agents.backends.kinds import BackendKind, ClientSettings, backend_kind


class ReplayedConfig(BackendConfig):
    """A ``replayed`` backend: every call is answered with ``answer``."""

    answer: str = Field(description="what the model answers to every call")


@backend_kind("replayed")
class Replayed(BackendKind):
    """Answers given in the configuration, for trying a setup without a model (an example of a plug-in kind)."""

    default_model = "replayed"
    sees_images = False
    function_calling = False
    structured_output = False
    settings: ClassVar[type[BaseModel] | None] = ReplayedConfig

    def client(self, settings: ClientSettings) -> ChatCompletionClient:
        from autogen_ext.models.replay import ReplayChatCompletionClient

        config = settings.config
        assert isinstance(config, ReplayedConfig)
        return ReplayChatCompletionClient([config.answer] * 64, model_info=settings.model_info)
