"""Finding and validating configurations: a built-in name or a YAML file, validated by its strategy's model.

A configuration names its strategy (``strategy:``; ``debate`` when it names only a ``protocol:``),
and that strategy's ``config_model`` validates every setting, so a typo is one clear line at load
time, never a surprise mid-run. The model is found without importing the strategy
(:data:`~debates.strategy.CONFIG_MODELS`): reading a configuration stays quick.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, Mapping

from pydantic import ValidationError

from m3d_agents.errors import InputError
from m3d_agents.safe_yaml import load_yaml

if TYPE_CHECKING:  # the kernel's models load with the first configuration, not with --help's list of names
    from debates.strategy import StrategyConfig


def builtin_config_names() -> list[str]:
    folder = resources.files("debates").joinpath("configs")
    return sorted(p.name[: -len(".yaml")] for p in folder.iterdir() if p.name.endswith(".yaml"))


def strategy_of(data: Mapping[str, Any]) -> str:
    """The strategy a configuration names; ``debate`` when it names only a protocol."""
    named = data.get("strategy")
    if named is None and "protocol" in data:
        return "debate"
    if not isinstance(named, str) or not named:
        from debates.strategy import CONFIG_MODELS

        raise InputError("strategy", f"missing; name one of: {', '.join(CONFIG_MODELS.names())}")
    return named


def config_model_of(strategy: str) -> type[StrategyConfig]:
    """The model that validates configurations of ``strategy``: a built-in's without importing the strategy, a
    plug-in's (registered with ``@strategy`` alone) from its class."""
    from debates.strategy import CONFIG_MODELS, STRATEGIES

    if strategy in CONFIG_MODELS:
        return CONFIG_MODELS.get(strategy)
    return STRATEGIES.get(strategy).config_model


def parse_config(data: Any, origin: str = "config") -> StrategyConfig:
    """Validate a configuration's data with the model of the strategy it names."""
    if not isinstance(data, dict):
        raise InputError(origin, "a configuration is a mapping of settings (name, strategy, ...)")
    model = config_model_of(strategy_of(data))
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InputError.from_validation(exc, origin, default_field="config") from None


@lru_cache(maxsize=64)
def _parsed(text: str, origin: str) -> StrategyConfig:
    """Parsed once per distinct text: a batch run loads its configuration for every sample, and YAML
    parsing cost more CPU than a model call; keyed on the text, an edited file is read afresh."""
    return parse_config(load_yaml(text, origin), origin)


CONFIG_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")


def load_config(name_or_path: str | Path) -> StrategyConfig:
    """A built-in configuration by name (``async``, ``check`` ...) or a YAML file by path.

    The two are told apart by the suffix, never by looking: a name is only ever looked up among the
    built-in files, so ``../../elsewhere`` cannot reach a file outside them, and a path is only
    ever a ``.yaml`` or ``.yml`` file that exists.
    """
    text = str(name_or_path)
    path = Path(text)
    if path.suffix in (".yaml", ".yml"):
        if not path.exists():
            raise InputError("config", f"{text} does not exist")
        if not path.is_file():
            raise InputError("config", f"{text} is not a file")
        try:
            return _parsed(path.read_text(encoding="utf-8"), text).model_copy(deep=True)
        except (OSError, UnicodeDecodeError) as exc:
            raise InputError("config", f"cannot read {text}: {getattr(exc, 'strerror', None) or exc}") from None
    if not CONFIG_NAME.fullmatch(text) or ".." in text:
        raise InputError(
            "config", f"{text!r} is neither a built-in configuration name nor a path to a .yaml file; "
            f"built in: {', '.join(builtin_config_names())}"
        )
    resource = resources.files("debates").joinpath("configs", f"{text}.yaml")
    if not resource.is_file():
        raise InputError("config", f"no configuration {text!r}; built in: {', '.join(builtin_config_names())}")
    return _parsed(resource.read_text(encoding="utf-8"), f"debates/configs/{text}.yaml").model_copy(deep=True)


def with_overrides(config: StrategyConfig, **changes: Any) -> StrategyConfig:
    """A copy of ``config`` with ``changes`` applied and validated like the YAML file itself, so an
    override from the command line cannot slip past a bound (``max_rounds`` at most 20 ...)."""
    unknown = [k for k in changes if k not in type(config).model_fields]
    if unknown:
        renamed = type(config).renamed_settings.get(unknown[0])
        if renamed is not None:
            raise InputError(unknown[0], f"the setting {unknown[0]!r} is now called {renamed!r}")
        raise InputError(unknown[0], f"the {config.name} configuration ({config.strategy}) has no setting {unknown[0]!r}")
    return parse_config({**config.model_dump(), **changes}, f"{config.name} with {', '.join(changes)} overridden")


def available_configs() -> list[str]:
    """The built-in configurations, for ``--help`` texts and notebooks: a new YAML file appears here."""
    return builtin_config_names()


