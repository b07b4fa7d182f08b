"""Every field of a configuration, flattened: dotted path, type, default, value and description.

``m3d config NAME`` prints these rows, a test fails on any row without a description, and the
documentation's reference page is generated from them, so the three can never disagree. The walk
works on any pydantic settings model: a strategy's configuration, the backend settings file.

Two ways to walk:

- a configuration *instance* lists what that configuration holds: each seat as ``seats[0]``,
  ``seats[1]`` ..., each seat's turn policy as the kind it is, with this configuration's values;
  a nested block that is not set (``retrieval: null``) still lists its fields, with no value;
- a model *class* lists every field that any configuration of it may hold: list items as
  ``seats[]``, and each kind of a union as ``turn_policy[kind=best_of_n]``; values are None.
"""

from __future__ import annotations

import json
import textwrap
import types
import typing
from pathlib import Path
from typing import Any, Literal, Union

import annotated_types
from pydantic import BaseModel, Field
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined, to_jsonable_python

REQUIRED = "(required)"
"""The ``default`` of a field that has none: every configuration must set it."""


class FieldRow(BaseModel):
    """One field of a configuration, as ``m3d config NAME --json`` prints it."""

    name: str = Field(description="the dotted path (seats[0].turn_policy.n)")
    type: str = Field(description="the accepted values, with their bounds")
    default: Any = Field(description=f"the value when the configuration does not set it; {REQUIRED!r} when it must")
    value: Any = Field(description="this configuration's value; None where the block holding it is not set")
    description: str = Field(description="what the field decides")


def config_fields(config: BaseModel | type[BaseModel]) -> list[FieldRow]:
    """The rows of every field of ``config`` and of every model nested in it, in declaration order."""
    rows: list[FieldRow] = []
    if isinstance(config, BaseModel):
        _walk(type(config), config, "", rows)
    else:
        _walk(config, None, "", rows)
    return rows


def _walk(model: type[BaseModel], instance: BaseModel | None, prefix: str, rows: list[FieldRow]) -> None:
    for name, info in model.model_fields.items():
        path = f"{prefix}{name}"
        value = getattr(instance, name) if instance is not None else None
        rows.append(FieldRow(
            name=path, type=type_name(info.annotation, info.metadata), default=default_of(info),
            value=to_jsonable_python(value) if instance is not None else None, description=info.description or "",
        ))
        _nested(info.annotation, value if instance is not None else None, path, rows)


def _nested(annotation: Any, value: Any, path: str, rows: list[FieldRow]) -> None:
    """The fields of the models inside one field: its own value's where it has one, else every model it may hold."""
    if isinstance(value, BaseModel):
        _walk(type(value), value, f"{path}.", rows)
        return
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (list, tuple) and args:
        if value:
            for index, item in enumerate(value):
                _nested(args[0], item, f"{path}[{index}]", rows)
        else:
            _nested(args[0], None, f"{path}[]", rows)
        return
    if origin is dict and len(args) == 2:
        if value:
            for key, item in value.items():
                _nested(args[1], item, f"{path}.{key}", rows)
        elif models_in(args[1]):
            _nested(args[1], None, f"{path}.<name>", rows)
        return
    models = models_in(annotation)
    if len(models) == 1:
        _walk(models[0], None, f"{path}.", rows)
    else:
        for variant in models:
            _walk(variant, None, f"{path}[{variant_label(variant)}].", rows)


def models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models a field's type may be (one for ``Model | None``, each variant of a union)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    if typing.get_origin(annotation) in (Union, types.UnionType, typing.Annotated):
        return [m for arg in typing.get_args(annotation) for m in models_in(arg)]
    return []


def variant_label(model: type[BaseModel]) -> str:
    """How a union's variant is named in a path: by its literal tag (``kind=best_of_n``), else its class."""
    for name, info in model.model_fields.items():
        if typing.get_origin(info.annotation) is Literal and len(typing.get_args(info.annotation)) == 1:
            return f"{name}={typing.get_args(info.annotation)[0]}"
    return model.__name__


def default_of(info: FieldInfo) -> Any:
    if info.default_factory is not None:
        return to_jsonable_python(info.default_factory())  # type: ignore[call-arg]
    if info.default is PydanticUndefined:
        return REQUIRED
    return to_jsonable_python(info.default)


def type_name(annotation: Any, metadata: typing.Sequence[Any] = ()) -> str:
    """A type as a reader writes it: ``int (>= 0, <= 5)``, ``float | None``, ``"all" | "lazy"``."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is typing.Annotated:
        return type_name(args[0], [*metadata, *args[1:]])
    bounds = _bounds(metadata)
    if annotation is type(None):
        text = "None"
    elif origin is Literal:
        text = " | ".join(json.dumps(a) for a in args)
    elif origin in (Union, types.UnionType):
        text = " | ".join(type_name(a) for a in args)
    elif origin is not None:
        text = f"{getattr(origin, '__name__', str(origin))}[{', '.join(type_name(a) for a in args)}]"
    elif isinstance(annotation, type) and issubclass(annotation, Path):
        text = "path"
    elif isinstance(annotation, type):
        text = annotation.__name__
    else:
        text = str(annotation).removeprefix("typing.")
    return f"{text} ({bounds})" if bounds else text


def _bounds(metadata: typing.Sequence[Any]) -> str:
    parts: list[str] = []
    for item in metadata:
        if isinstance(item, FieldInfo):
            inner = _bounds(item.metadata)
            parts += [inner] if inner else []
        elif isinstance(item, annotated_types.Ge):
            parts.append(f">= {item.ge}")
        elif isinstance(item, annotated_types.Gt):
            parts.append(f"> {item.gt}")
        elif isinstance(item, annotated_types.Le):
            parts.append(f"<= {item.le}")
        elif isinstance(item, annotated_types.Lt):
            parts.append(f"< {item.lt}")
        elif isinstance(item, annotated_types.MinLen):
            parts.append(f"at least {item.min_length}")
        elif isinstance(item, annotated_types.MaxLen):
            parts.append(f"at most {item.max_length}")
    return ", ".join(parts)


def shown(value: Any, width: int) -> str:
    """A value as JSON on one line, cut to ``width`` characters; a required field's default as ``(required)``."""
    text = REQUIRED if value == REQUIRED else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[: max(width - 3, 1)] + "..."


def summarised(value: Any) -> str:
    """A block's value where its fields are listed under it: its shape, not its content again."""
    if isinstance(value, dict):
        return "{...}"
    if isinstance(value, list):
        return f"[{len(value)} item{'s' if len(value) != 1 else ''}]"
    return "null"


def render_text(rows: typing.Sequence[FieldRow], width: int = 80) -> str:
    """The rows for a terminal or a pipe: ``name = value`` (and the default where it differs), then the
    type and the description, wrapped and indented, every line within ``width`` columns. A block whose
    fields follow it shows only its shape."""
    lines: list[str] = []
    indent = "    "
    for index, row in enumerate(rows):
        following = rows[index + 1].name if index + 1 < len(rows) else ""
        block = following.startswith((f"{row.name}.", f"{row.name}["))
        head = f"{row.name} = "
        first = head + (summarised(row.value) if block else shown(row.value, max(width - len(head), 12)))
        if not block and row.default != row.value and row.default != REQUIRED:
            default = f"  (default {shown(row.default, 40)})"
            if len(first) + len(default) <= width:
                first += default
            else:
                lines.append(first)
                first = indent + f"default {shown(row.default, width - len(indent) - 8)}"
        lines.append(first if len(first) <= width else first[: width - 3] + "...")
        body = f"{row.type}. {row.description or '(no description)'}"
        lines += textwrap.wrap(body, width=width, initial_indent=indent, subsequent_indent=indent,
                               break_long_words=True, break_on_hyphens=False)
    return "\n".join(lines)
