"""``KIND:PATH`` dataset specs, resolved to a loader and its options.

Options come as ``key=value`` strings (from ``--dataset-option``) and are validated by the
loader's own pydantic model, so a misspelt option is an error that lists the valid ones.
"""

from __future__ import annotations

from pathlib import Path

from m3d_agents.datasets.base import DATASETS, LoadedDataset, parse_options
from m3d_agents.errors import InputError


def parse_spec(spec: str) -> tuple[str, Path]:
    kind, sep, path = spec.partition(":")
    if not sep or not path:
        raise InputError("dataset", f"{spec!r} is not KIND:PATH; kinds: {', '.join(DATASETS.names())}")
    kind = kind.strip().lower()
    DATASETS.get(kind)
    return kind, Path(path).expanduser()


def parse_option_pairs(pairs: list[str]) -> dict[str, str]:
    options: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InputError("dataset option", f"{pair!r} is not of the form key=value")
        options[key.strip()] = value
    return options


def load_dataset(spec: str, options: dict[str, str] | None = None) -> LoadedDataset:
    """Load every sample of ``spec``; ids must be unique, since resuming a run relies on them."""
    kind, path = parse_spec(spec)
    if not path.exists():
        raise InputError("dataset", f"{path} does not exist")
    loader = DATASETS.get(kind)
    parsed = parse_options(loader.options, options or {}, kind)
    loaded = loader.load(path, parsed)
    loaded.report.kind = kind
    seen: set[str] = set()
    for sample in loaded.samples:
        if sample.id in seen:
            raise InputError("dataset", f"sample id {sample.id!r} occurs twice in {path}; ids must be unique")
        seen.add(sample.id)
    return loaded
