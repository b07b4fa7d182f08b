"""``KIND:PATH`` dataset specs, resolved to a loader and its options.

Options come as ``key=value`` strings (from ``--dataset-option``) and are validated by the
loader's own pydantic model, so a misspelt option is an error that lists the valid ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from m3d_agents.datasets import amg, fakesv, generic, mediaeval, mmfakebench, mocheg, mr2, newsclippings, rwpost, verite
from m3d_agents.datasets.base import LoadedDataset, parse_options
from m3d_agents.errors import InputError


@dataclass(frozen=True)
class DatasetKind:
    name: str
    module: ModuleType
    summary: str


KINDS: dict[str, DatasetKind] = {
    k.name: k
    for k in [
        DatasetKind("mmfakebench", mmfakebench, "MMFakeBench JSON (four-way m3d labels)"),
        DatasetKind("newsclippings", newsclippings, "NewsCLIPpings merged_balanced JSON; needs visualnews=data.json"),
        DatasetKind("verite", verite, "VERITE.csv (true / miscaptioned / out-of-context)"),
        DatasetKind("rwpost", rwpost, "RW-Post (AgentFact) JSON Lines, fact-check ratings"),
        DatasetKind("mocheg", mocheg, "Mocheg Corpus2.csv, claims only"),
        DatasetKind("amg", amg, "AMG JSON (real plus five forgery types)"),
        DatasetKind("fakesv", fakesv, "FakeSV / FakeTT style JSON Lines of video ids"),
        DatasetKind("mediaeval", mediaeval, "MediaEval 2016 posts.txt (folder or file) with images/"),
        DatasetKind("mr2", mr2, "MR2 dataset_items_*.json (binary or factcheck)"),
        DatasetKind("jsonl", generic, "any JSON Lines / JSON file with a column mapping (text=..., label=...)"),
        DatasetKind("csv", generic, "any CSV / TSV file with a column mapping (text=..., label=...)"),
    ]
}
KINDS["agentfact"] = DatasetKind("agentfact", rwpost, "alias of rwpost")


def parse_spec(spec: str) -> tuple[str, Path]:
    kind, sep, path = spec.partition(":")
    if not sep or not path:
        raise InputError("dataset", f"{spec!r} is not KIND:PATH; kinds: {', '.join(KINDS)}")
    kind = kind.strip().lower()
    if kind not in KINDS:
        raise InputError("dataset", f"unknown dataset kind {kind!r}; kinds: {', '.join(KINDS)}")
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
    module = KINDS[kind].module
    parsed = parse_options(module.Options, options or {}, kind)
    loaded: LoadedDataset = module.load(path, parsed)
    loaded.report.kind = kind
    seen: set[str] = set()
    for sample in loaded.samples:
        if sample.id in seen:
            raise InputError("dataset", f"sample id {sample.id!r} occurs twice in {path}; ids must be unique")
        seen.add(sample.id)
    return loaded
