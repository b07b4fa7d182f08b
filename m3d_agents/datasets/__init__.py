"""Loaders that turn benchmark files into Samples with gold labels on our taxonomies."""

from m3d_agents.datasets.base import LoadedDataset, LoadReport
from m3d_agents.datasets.registry import KINDS, load_dataset, parse_option_pairs, parse_spec

__all__ = ["KINDS", "LoadReport", "LoadedDataset", "load_dataset", "parse_option_pairs", "parse_spec"]
