"""The Ray side of a distributed run: the cluster session, the sample workers and the permit broker.

``m3d evaluate --workers N`` starts a local Ray cluster for the run and stops it after;
``--ray-address`` joins an existing one (and only disconnects at the end, which ends this run's
actors). A process that already called ``ray.init`` (a notebook, a test) is used as it is.

Each worker is a Ray actor process with its own event loop and its own backend pool, running
samples through the same :meth:`BatchRunner.run_one` as a local run, so a row is built the same
way wherever it ran. Workers never touch the run folder: they return rows to the driver, which
alone writes the results file (see :mod:`debates.eval.run.ray_runner`).

What a worker needs is sent to it: the run session's recipe (configuration, backend override,
retrieval mode and evidence store), the backend settings and the samples (image paths made
absolute); each worker opens the same run session on its own pool. Keys are not: a worker reads
them from its own environment, so on a remote cluster set them on the nodes. Data set files must be at the same path on every node.
"""

from __future__ import annotations

import importlib
import logging
import os
import socket
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from debates.eval.run.batch import BatchRunner
from debates.session import SessionSpec
from debates.eval.records import RunManifest
from debates.eval.run.permits import ActorCalls, ClusterPool, PermitBroker
from m3d_agents.backends.config import BackendConfig, BackendSettings
from m3d_agents.errors import InputError
from m3d_agents.sample import Sample

FORWARDED_ENV = ("M3D_VLLM_BASE_URL",)
"""Settings (never keys) that a worker on another machine gets from the driver's environment."""

PROJECT_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class WorkerSpec:
    """Everything a worker needs to build its runner; sent once, when the worker starts."""

    config: str
    out_dir: Path
    manifest: RunManifest
    settings: BackendSettings
    session: SessionSpec
    """The run session's recipe: the worker opens the same session (configuration, backend override,
    evidence sources) on its own pool."""
    overrides: dict[str, BackendConfig] = field(default_factory=dict)
    rate_limits: dict[str, float] = field(default_factory=dict)
    imports: tuple[str, ...] = ()
    """Modules to import first: plug-ins (strategies, protocols, ...) that register themselves."""
    options: dict[str, Any] = field(default_factory=dict)
    """Further BatchRunner keyword arguments, passed through unchanged."""


class SampleWorker:
    """A Ray actor that runs samples; its methods run on the actor's one event loop."""

    def __init__(self, spec: WorkerSpec, broker: Any) -> None:
        for module in spec.imports:
            importlib.import_module(module)
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.pool = ClusterPool(spec.settings, spec.overrides, broker=ActorCalls(broker), holder=self.holder,
                                rate_limits=spec.rate_limits)
        self.spec = spec
        self.session = spec.session.session(self.pool)
        self.runner = BatchRunner(spec.config, [], self.session, spec.out_dir, spec.manifest, **spec.options)

    async def hello(self) -> dict[str, Any]:
        """Called once before any sample: opens the worker's run session inside its event loop."""
        await self.session.open()
        return {"holder": self.holder, "pid": os.getpid(), "node": socket.gethostname(), "cpu_s": time.process_time()}

    async def run(self, index: int, sample: Sample) -> str:
        """One sample's row as a JSON line (a failed sample gives an error row, as in a local run)."""
        row = await self.runner.run_one(index, sample)
        return row.model_dump_json()

    async def cpu_seconds(self) -> float:
        return time.process_time()

    async def close(self) -> None:
        try:
            await self.session.close()
        finally:
            await self.pool.close()


class BrokerActor(PermitBroker):
    """The permit broker as a Ray actor (it also reports its process's CPU time, for the benchmark)."""

    async def cpu_seconds(self) -> float:
        return time.process_time()


def _quiet_ray() -> None:
    # Ray announces its token mode on every start; the run's own progress is what a user reads.
    logging.getLogger("ray").setLevel(logging.ERROR)
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")


class RaySession:
    """A connection to a Ray cluster for one run: started, joined or borrowed, and ended to match."""

    def __init__(self, address: str | None = None, workers: int | None = None) -> None:
        self.address = address
        self.requested = workers
        self.owned = False
        self.local = False

    def open(self) -> int:
        """Connect (starting a local cluster when there is no address); returns the number of workers."""
        try:
            import ray
        except ImportError:
            raise InputError("workers", "runs on Ray need the ray package: pip install 'm3d-agents[ray]'") from None

        _quiet_ray()
        if ray.is_initialized():
            self.local = self._all_nodes_here(ray)
        elif self.address:
            ray.init(address=self.address, log_to_driver=False, logging_level=logging.ERROR)
            self.owned = True
            self.local = self._all_nodes_here(ray)
        else:
            cpus = self.requested or os.cpu_count() or 1
            ray.init(num_cpus=cpus, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
            self.owned = self.local = True
        if self.requested is not None:
            return self.requested
        cpus = int(ray.cluster_resources().get("CPU", 1))
        if cpus < 1:
            raise InputError("workers", f"the Ray cluster at {self.address or 'this process'} offers no CPU for a worker")
        return cpus

    @staticmethod
    def _all_nodes_here(ray: Any) -> bool:
        here = ray.util.get_node_ip_address()
        nodes = [node for node in ray.nodes() if node.get("Alive")]
        return bool(nodes) and all(node.get("NodeManagerAddress") == here for node in nodes)

    def worker_env(self) -> dict[str, str]:
        """Environment for the workers: on this machine, this checkout first on the import path (the
        installed package may be another copy); elsewhere, the forwarded settings only."""
        env = {name: os.environ[name] for name in FORWARDED_ENV if os.environ.get(name)}
        if self.local:
            paths = [str(PROJECT_ROOT), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
            env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
        return env

    def start_broker(self) -> Any:
        import ray

        options: dict[str, Any] = {"num_cpus": 0, "max_concurrency": 10_000}
        env = self.worker_env()
        if env:
            options["runtime_env"] = {"env_vars": env}
        return ray.remote(BrokerActor).options(**options).remote()

    def start_worker(self, spec: WorkerSpec, broker: Any, share: int) -> Any:
        import ray

        env = self.worker_env()
        options: dict[str, Any] = {"num_cpus": 1, "max_restarts": 0, "max_concurrency": max(1000, share + 16)}
        if env:
            options["runtime_env"] = {"env_vars": env}
        return ray.remote(SampleWorker).options(**options).remote(spec, broker)

    @staticmethod
    def kill(handle: Any) -> None:
        import ray

        try:
            ray.kill(handle, no_restart=True)
        except Exception:  # noqa: BLE001 - an actor that is already gone needs no killing
            pass

    def close(self) -> None:
        import ray

        if self.owned and ray.is_initialized():
            ray.shutdown()
        self.owned = False


def absolute_paths(sample: Sample) -> Sample:
    """The sample with image and video paths made absolute: a worker's working folder may differ."""
    video = sample.video
    if video is not None and video.path is not None and not video.path.is_absolute():
        video = video.model_copy(update={"path": video.path.resolve()})
    if video is sample.video and all(path.is_absolute() for path in sample.images):
        return sample
    return sample.model_copy(update={"images": [path.resolve() for path in sample.images], "video": video})
