"""Who takes part in a check and what they produce: samples, verdicts, parsing, backends, agents.

The names below are imported from their modules on first use, so that importing one module of the
package (a command that only prints reads a few) does not build every model of the others.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from m3d_agents.errors import InputError, ParseError
    from m3d_agents.evidence import Evidence
    from m3d_agents.labels import TAXONOMIES, Taxonomy, get_taxonomy
    from m3d_agents.sample import InputLimits, Sample, SampleMetadata, VideoRef
    from m3d_agents.verdict import Accounting, Finding, TranscriptTurn, Verdict

_WHERE = {
    "InputError": "errors", "ParseError": "errors", "Evidence": "evidence",
    "TAXONOMIES": "labels", "Taxonomy": "labels", "get_taxonomy": "labels",
    "InputLimits": "sample", "Sample": "sample", "SampleMetadata": "sample", "VideoRef": "sample",
    "Accounting": "verdict", "Finding": "verdict", "TranscriptTurn": "verdict", "Verdict": "verdict",
}

__all__ = [
    "Accounting",
    "Evidence",
    "Finding",
    "InputError",
    "InputLimits",
    "ParseError",
    "Sample",
    "SampleMetadata",
    "TAXONOMIES",
    "Taxonomy",
    "TranscriptTurn",
    "Verdict",
    "VideoRef",
    "get_taxonomy",
]


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_WHERE[name]}"), name)
