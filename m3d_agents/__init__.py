"""Who takes part in a check and what they produce: samples, verdicts, parsing, backends, agents."""

from m3d_agents.errors import InputError, ParseError
from m3d_agents.labels import TAXONOMIES, Taxonomy, get_taxonomy
from m3d_agents.sample import InputLimits, Sample, SampleMetadata, VideoRef
from m3d_agents.verdict import Accounting, Finding, TranscriptTurn, Verdict
from m3d_agents.evidence import Evidence

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
