"""Loaders that turn benchmark files into Samples with gold labels on our taxonomies.

One module per data set format; each registers its loader with ``@dataset``, and importing this
package registers the built-in ones.
"""

from m3d_agents.datasets import amg, claimreview2024, fakesv, fakett, fakevv, generic, mediaeval, mmfakebench, mocheg, mr2, newsclippings, rwpost, verite
from m3d_agents.datasets.base import DATASETS, DatasetKind, LoadedDataset, LoadReport, dataset
from m3d_agents.datasets.registry import load_dataset, parse_option_pairs, parse_spec

__all__ = [
    "DATASETS", "DatasetKind", "LoadReport", "LoadedDataset", "amg", "claimreview2024", "dataset", "fakesv", "fakett", "fakevv", "generic", "load_dataset",
    "mediaeval", "mmfakebench", "mocheg", "mr2", "newsclippings", "parse_option_pairs", "parse_spec", "rwpost", "verite",
]
