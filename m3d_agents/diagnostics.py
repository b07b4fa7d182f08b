"""How a verdict was reached: the part every strategy's diagnostics share, and how a row is read back.

Each strategy keeps its own diagnostics model beside itself (``CheckDiagnostics`` in
:mod:`debates.strategies.check`, ``DebateDiagnostics`` in :mod:`debates.debate_engine.diagnostics` ...) and
registers it with its strategy (``@strategy("check", diagnostics=CheckDiagnostics)``), so a new
strategy adds its diagnostics without editing this module. Training export, reports, the notebooks
and the web page read those models' fields; a field read by key with a default would pass silently
over a strategy that never writes it, which is how a debate's verdict once looked like a well-formed
FactGuard trajectory.

Every model extends :class:`StrategyDiagnostics` (wall time, stop reason, what decided). A verdict's
diagnostics are validated by the model registered under their ``strategy``. A results file written
before the diagnostics were typed holds plain dictionaries without a ``strategy`` key;
:func:`read_diagnostics` recognises each strategy's old dictionary by the keys its writer always wrote
(the model's ``legacy_keys``) and reads it into today's model, and keeps what it cannot read that way
as :class:`UntypedDiagnostics`, so an old run folder still loads, reports and reviews. Diagnostics of
a strategy whose model is not registered (a plug-in that registers none) are kept the same way.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, SerializeAsAny, TypeAdapter, ValidationError

from m3d_agents.registry import Registry


class StrategyDiagnostics(BaseModel):
    """What every strategy's diagnostics say."""

    model_config = ConfigDict(extra="forbid")

    strategy: str = Field(description="the strategy that wrote these diagnostics")
    legacy_keys: ClassVar[frozenset[str]] = frozenset()
    """The keys this strategy's writer always wrote before diagnostics were typed: how an old row is recognised."""
    wall_time_s: float = Field(0.0, ge=0.0, description="seconds from the start of the sample to its verdict")
    stop_reason: str = Field("", description="why the strategy stopped (consensus, a turn limit, a confirmed forgery ...)")
    decided_by: str | None = Field(
        None, description="what gave the label (consensus, majority, judge, fusion ...); None: no decision rule ran or none decided"
    )
    items_lost: list[str] = Field(
        default_factory=list, description="pages, images and videos a parser lost (it crashed, timed out or passed its "
        "memory limit), one line each naming the item and why; the sample went on without them"
    )


class UntypedDiagnostics(StrategyDiagnostics):
    """Diagnostics no model here reads: an old results row that does not fit its strategy's model
    today, or a plug-in strategy's own. ``source`` names the strategy where it is known."""

    model_config = ConfigDict(extra="forbid")

    strategy: Literal["untyped"] = "untyped"
    source: str = Field("unknown", description="the strategy that wrote them, where it is known")
    data: dict[str, Any] = Field(default_factory=dict, description="the diagnostics as written")


DIAGNOSTICS_MODELS: Registry[type[StrategyDiagnostics]] = Registry("diagnostics model", field="diagnostics.strategy")
"""Each strategy's diagnostics model by the strategy's name; a strategy registers its own (see :func:`register_diagnostics`)."""

def register_diagnostics(strategy: str, model: type[StrategyDiagnostics]) -> None:
    """Register ``model`` as the diagnostics of ``strategy`` (its ``strategy`` field must default to that name)."""
    named = model.model_fields["strategy"].default
    if named != strategy:
        raise ValueError(f"{model.__name__}.strategy defaults to {named!r}, not to the strategy {strategy!r} it is registered for")
    DIAGNOSTICS_MODELS.add(strategy, model)


register_diagnostics("untyped", UntypedDiagnostics)

COMMON = ("wall_time_s", "stop_reason", "decided_by")


def legacy_strategy(data: dict[str, Any]) -> str | None:
    """The strategy whose old writer wrote ``data`` (a dictionary without ``strategy``), if any did: the most
    specific signature (the most keys) that the dictionary holds."""
    signatures = [(name, DIAGNOSTICS_MODELS.get(name).legacy_keys) for name in DIAGNOSTICS_MODELS]
    ranked = sorted((entry for entry in signatures if entry[1]), key=lambda entry: -len(entry[1]))
    return next((name for name, keys in ranked if keys <= data.keys()), None)


def untyped(data: dict[str, Any], source: str | None) -> UntypedDiagnostics:
    common = {k: data[k] for k in COMMON if k in data}
    try:
        StrategyDiagnostics.model_validate({"strategy": "untyped", **common})
    except ValidationError:
        common = {}
    return UntypedDiagnostics.model_validate({"strategy": "untyped", "source": source or "unknown", "data": data, **common})


def read_diagnostics(value: Any) -> Any:
    """Today's diagnostics as their strategy's model; an old dictionary as its strategy's model, else untyped;
    diagnostics of a strategy that registered no model as untyped. Runs before the field is validated."""
    if isinstance(value, StrategyDiagnostics):
        own = DIAGNOSTICS_MODELS.get(value.strategy) if value.strategy in DIAGNOSTICS_MODELS else None
        if own is not None and isinstance(value, own):
            return value
        value = {**value.model_dump(mode="json"), "strategy": value.strategy}
    if not isinstance(value, dict):
        return value
    if "strategy" in value:
        if value["strategy"] in DIAGNOSTICS_MODELS:
            return DIAGNOSTICS_MODELS.get(value["strategy"]).model_validate(value)
        rest = {k: v for k, v in value.items() if k != "strategy"}
        return untyped(rest, str(value["strategy"]))
    strategy = legacy_strategy(value)
    if strategy is not None:
        try:
            return DIAGNOSTICS_MODELS.get(strategy).model_validate({**value, "strategy": strategy})
        except ValidationError:
            pass
    return untyped(value, strategy)


Diagnostics = Annotated[SerializeAsAny[StrategyDiagnostics], BeforeValidator(read_diagnostics)]
"""A verdict's diagnostics: the model registered for the strategy that wrote them (see the module docstring)."""

DIAGNOSTICS: TypeAdapter[Diagnostics] = TypeAdapter(Diagnostics)
"""Validates diagnostics outside a verdict (a results row's, a trajectory's)."""

