"""An answer cut to its schema's length bounds, with a record of every cut.

Backends that enforce a JSON schema never write a text or a list longer than its bound; the others
(OpenAI's plain JSON mode among them) can, and a strict read then rejects an answer whose only fault
is length. Losing the whole answer for that would change what the run does (a plan that cannot be
read becomes "search the post as written"), so callers that can use a cut answer read it with
:func:`fit_to_bounds` once the retries are spent, and record what was cut: never silently.
"""

from __future__ import annotations

from typing import Annotated, Any, get_args, get_origin

from annotated_types import MaxLen
from pydantic import BaseModel
from pydantic.fields import FieldInfo


def fit_to_bounds(schema: type[BaseModel], data: Any) -> tuple[Any, list[str]]:
    """``data`` with every text and list longer than ``schema`` allows cut to its bound, and one line per cut.

    Only lengths are fitted; a missing field or a value outside an enum stays as it is, for the
    schema's validation to reject.
    """
    return _fit_model(schema, data, "")


def _fit_model(schema: type[BaseModel], data: Any, path: str) -> tuple[Any, list[str]]:
    if not isinstance(data, dict):
        return data, []
    fitted, cuts = dict(data), []
    for name, info in schema.model_fields.items():
        if name in fitted:
            fitted[name], more = _fit(info.annotation, list(info.metadata), fitted[name], f"{path}{name}")
            cuts += more
    return fitted, cuts


def _limits(extra: list[Any]) -> list[Any]:
    out: list[Any] = []
    for item in extra:
        out += item.metadata if isinstance(item, FieldInfo) else [item]
    return out


def _fit(annotation: Any, metadata: list[Any], value: Any, path: str) -> tuple[Any, list[str]]:
    if get_origin(annotation) is Annotated:
        inner, *extra = get_args(annotation)
        return _fit(inner, metadata + _limits(extra), value, path)
    bound = next((m.max_length for m in metadata if isinstance(m, MaxLen)), None)
    cuts: list[str] = []
    if isinstance(value, str) and bound is not None and len(value) > bound:
        cuts.append(f"{path}: {len(value)} characters cut to {bound}")
        return value[:bound], cuts
    if isinstance(value, list) and get_origin(annotation) is list:
        if bound is not None and len(value) > bound:
            cuts.append(f"{path}: {len(value)} items cut to {bound}")
            value = value[:bound]
        item_type = (get_args(annotation) or (Any,))[0]
        items = []
        for i, item in enumerate(value):
            fitted, more = _fit(item_type, [], item, f"{path}[{i}]")
            items.append(fitted)
            cuts += more
        return items, cuts
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return _fit_model(annotation, value, f"{path}.")
    return value, cuts
