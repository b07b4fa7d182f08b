"""Every setting of every built-in configuration is documented and bounded, and renamed keys say their new name."""

from __future__ import annotations

from pathlib import Path

import pytest

from debates.debate_engine.config import TURN_POLICY_SETTINGS, BestOfNPolicy, ReactPolicy, SinglePolicy
from debates.config_loader import builtin_config_names, load_config, with_overrides
from m3d_agents.backends.config import BackendConfig, BackendSettings, load_backend_settings
from m3d_agents.config_reference import config_fields
from m3d_agents.errors import InputError


@pytest.mark.parametrize("name", builtin_config_names())
def test_every_field_of_every_builtin_configuration_has_a_description(name: str) -> None:
    config = load_config(name)
    rows = config_fields(config) + config_fields(type(config))
    undocumented = sorted({row.name for row in rows if not row.description.strip()})
    assert undocumented == [], f"{name}: fields without a description: {', '.join(undocumented)}"


def test_the_walk_reaches_the_nested_settings_the_reference_promises() -> None:
    names = {row.name for row in config_fields(load_config("agentm3d"))}
    assert {"seats[0].turn_policy.n", "seats[0].turn_policy.reward.kind", "retrieval.leakage.enabled",
            "retrieval.fetch.max_bytes", "parse_retries", "backend"} <= names
    every_kind = {row.name for row in config_fields(type(load_config("judged")))}
    assert {"seats[].turn_policy[kind=react].max_steps", "seats[].turn_policy[kind=best_of_n].reward.device",
            "seats[].turn_policy[kind=single].kind"} <= every_kind
    t2agent = {row.name for row in config_fields(load_config("t2agent"))}
    assert {"search.alpha", "subtasks[0].tools", "subtasks[2].sees_image"} <= t2agent


def test_every_field_of_the_backend_settings_file_has_a_description() -> None:
    rows = config_fields(BackendSettings)
    assert [row.name for row in rows if not row.description.strip()] == []
    assert "backends.<name>.transport_retries" in {row.name for row in rows}


def user_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mine.yaml"
    path.write_text(text)
    return path


def test_an_old_key_in_a_users_file_fails_with_one_line_naming_the_new_key(tmp_path: Path) -> None:
    path = user_config(tmp_path, "name: mine\nstrategy: check\nretries: 1\n")
    with pytest.raises(InputError) as caught:
        load_config(path)
    assert "\n" not in str(caught.value) and "'retries' is now called 'parse_retries'" in str(caught.value)
    with pytest.raises(InputError, match="'retries' is now called 'parse_retries'"):
        with_overrides(load_config("check"), retries=0)
    backends = tmp_path / "m3d.yaml"
    backends.write_text("backends:\n  gpu: {kind: vllm, max_retries: 0}\n")
    with pytest.raises(InputError) as caught:
        load_backend_settings(backends)
    assert "\n" not in str(caught.value)
    assert str(caught.value).startswith("backends.gpu: ") and "'max_retries' is now called 'transport_retries'" in str(caught.value)


def test_the_new_keys_load(tmp_path: Path) -> None:
    config = load_config(user_config(tmp_path, "name: mine\nstrategy: check\nparse_retries: 0\nbackend: gpu\n"))
    assert (config.parse_retries, config.backend) == (0, "gpu")
    assert BackendConfig(kind="vllm", transport_retries=0).transport_retries == 0


@pytest.mark.parametrize(("text", "field"), [
    ("strategy: agentfact\nseats: [{role: explainer}, {role: reasoner}]\nmax_tokens: 1000000000\n", "max_tokens"),
    ("strategy: agentfact\nseats: [{role: explainer}, {role: reasoner}]\nmax_tokens: 3\n", "max_tokens"),
    ("strategy: check\nparse_retries: 50\n", "parse_retries"),
    ("strategy: self-consistency\ntemperature: 7\n", "temperature"),
    ("strategy: self-consistency\ntemperature: .nan\n", "temperature"),
])
def test_absurd_values_are_one_line_naming_the_field(tmp_path: Path, text: str, field: str) -> None:
    with pytest.raises(InputError) as caught:
        load_config(user_config(tmp_path, "name: mine\n" + text))
    assert caught.value.field == field and "\n" not in str(caught.value)


@pytest.mark.parametrize("seed", [-1, 2**40])
def test_absurd_seeds_are_refused(seed: int) -> None:
    with pytest.raises(ValueError, match="seed"):
        BackendConfig(seed=seed)
    config = load_config("t2agent-random-init")
    with pytest.raises(InputError, match="search.prior_seed"):
        with_overrides(config, search={**config.search.model_dump(), "prior_seed": seed})


def test_a_turn_policy_takes_only_its_own_kinds_settings() -> None:
    assert isinstance(TURN_POLICY_SETTINGS.validate_python({}), SinglePolicy), "no kind: single, as before"
    assert isinstance(TURN_POLICY_SETTINGS.validate_python({"kind": "best_of_n", "n": 3}), BestOfNPolicy)
    react = TURN_POLICY_SETTINGS.validate_python({"kind": "react", "tools": {"Wikipedia": "wikipedia_search"}})
    assert isinstance(react, ReactPolicy) and react.max_steps == 4
    with pytest.raises(ValueError, match="tools"):
        TURN_POLICY_SETTINGS.validate_python({"kind": "best_of_n", "tools": {"Wikipedia": "wikipedia_search"}})
    with pytest.raises(ValueError, match="n"):
        TURN_POLICY_SETTINGS.validate_python({"kind": "react", "n": 5})
    with pytest.raises(ValueError, match="single"):
        TURN_POLICY_SETTINGS.validate_python({"n": 5})
    with pytest.raises(ValueError, match="'single', 'best_of_n', 'planned', 'react'"):
        TURN_POLICY_SETTINGS.validate_python({"kind": "beam"})




def test_each_strategys_configuration_model_is_found_without_the_strategy_and_is_the_same_class() -> None:
    from debates.strategy import CONFIG_MODELS, STRATEGIES

    builtin = {name for name in STRATEGIES.names() if STRATEGIES.get(name).__module__.startswith("debates.strategies.")}
    assert builtin == set(CONFIG_MODELS.names()), "a test's own plug-in strategies may sit beside the built-in ones"
    for name in CONFIG_MODELS.names():
        assert CONFIG_MODELS.get(name) is STRATEGIES.get(name).config_model, name


def test_a_registry_imports_its_plug_ins_on_the_first_lookup_only() -> None:
    import sys

    from m3d_agents.registry import Registry

    registry: Registry[object] = Registry("thing", plugins=("tests.support.lazy_plugin",))
    sys.modules.pop("tests.support.lazy_plugin", None)
    assert "tests.support.lazy_plugin" not in sys.modules
    registry.add("early", object())  # adding imports nothing
    assert "tests.support.lazy_plugin" not in sys.modules
    assert registry.names() == ["early"] and "tests.support.lazy_plugin" in sys.modules
    with pytest.raises(InputError, match="unknown thing 'missing'; known: early"):
        registry.get("missing")
