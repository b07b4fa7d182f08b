"""What ``m3d serve`` hands the web application: backends, run roots, data sets and limits."""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from debates.ui.web.security import is_loopback
from m3d_agents.backends.factory import BackendPool
from m3d_agents.errors import InputError
from m3d_agents.isolation import ParserPool, current_pool
from m3d_agents.sample import InputLimits, Sample
from m3d_agents.verdict import RetrievalMode

if TYPE_CHECKING:
    from retrieval.runpath import RunRetrieval

SourcesFor = Callable[[Sample], "RunRetrieval | None"]
"""Evidence sources that the embedding application opened itself for a post (None: the session opens the run's)."""


@dataclass
class WebSettings:
    """Everything a request may use; built once per server, never changed by a request."""

    pool_factory: Callable[[], BackendPool]
    """A fresh pool per debate, closed when that debate ends."""
    backends: list[str]
    default_backend: str
    run_roots: list[Path] = field(default_factory=list)
    """The only folders whose run folders the review page opens."""
    datasets: dict[str, list[Sample]] = field(default_factory=dict)
    """Posts a person may pick, by data set name (``KIND:PATH`` as given at start-up)."""
    study_dir: Path = Path("studies")
    host: str = "127.0.0.1"
    token: str | None = None
    max_upload_bytes: int = 10 * 1024 * 1024
    limits: InputLimits = field(default_factory=InputLimits)
    retrieval: RetrievalMode | None = None
    """``--retrieval`` for every post that is not replayed; None leaves it to the configuration."""
    evidence_store: Path | None = None
    replay_mr2: Path | None = None
    """``--replay-mr2``: the MR2 trace whose claims (``replayed_ids``) are debated with their recorded evidence."""
    replayed_ids: frozenset[str] = frozenset()
    sources_for: SourcesFor | None = None
    unopened_debate_s: float = 600.0
    """A debate whose page never connects is dropped after this long, with its upload."""
    max_study_sessions: int = 100
    """Study sessions held at once (each keeps its posts and the system's verdicts in memory); a new one past this is
    refused, saying so, until one expires. ``m3d serve --max-studies``."""
    study_idle_s: float = 7200.0
    """A study session with no request for this long is dropped with what it holds in memory; the answers given are
    already in its file. ``m3d serve --study-idle-minutes``."""
    upload_dir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="m3d-serve-uploads-")))
    parsers: ParserPool = field(default_factory=current_pool)
    """Where every debate's pages, images and videos, and every upload, are parsed: the server process's one
    bounded pool of worker processes (a parser that crashes on an upload or a page costs that item, never
    the server), shut down when the server exits."""

    def check(self) -> None:
        """Refuse settings that would expose the server: another address needs a token."""
        if not is_loopback(self.host) and not self.token:
            raise InputError("host", f"{self.host} is not a loopback address: set a token (M3D_SERVE_TOKEN) to serve there")
        if self.token is not None and len(self.token) < 16:
            raise InputError("token", "a server token needs at least 16 characters")
        if self.max_study_sessions < 1:
            raise InputError("max-studies", "must be at least 1")
        if not self.study_idle_s > 0:
            raise InputError("study-idle-minutes", "must be more than 0")
        if self.default_backend not in self.backends:
            raise InputError("backend", f"{self.default_backend!r} is not one of the backends {', '.join(self.backends)}")
        for root in self.run_roots:
            if not root.is_dir():
                raise InputError("runs", f"{root} is not a folder")
        probe = self.study_dir
        while not probe.exists() and probe != probe.parent:
            probe = probe.parent
        if probe.exists() and not probe.is_dir():
            where = "is" if probe == self.study_dir else f"is inside {probe}, which is"
            raise InputError("study-dir", f"{self.study_dir} {where} a file, not a folder; study answers are saved in a folder")
