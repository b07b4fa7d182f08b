"""Backend kinds: what a ``kind:`` in a backend's configuration means, registered like every other plug-in.

A kind says how a backend of its kind is reached (its default model, the variable its key is read
from, where its endpoint is when the configuration names none), what its model can do (images,
function calls, schema-constrained answers, a grammar field), and how its chat client is built.
The three built-in kinds (``local``, ``vllm``, ``openai``) are declared here and all speak the
OpenAI chat-completions API through one client (:meth:`BackendKind.client`); a kind that speaks
another API overrides ``client`` and returns its own AutoGen ``ChatCompletionClient``. A package
of its own registers a kind under the ``m3d_agents.backends`` entry-point group (see
``docs/extending.md``), and ``kind: <its name>`` then validates like a built-in.

Declaring a kind imports nothing heavy: the clients (aiohttp, the OpenAI SDK, AutoGen) are imported
when a client is built, so that a command that only prints never pays for them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Literal, TypeVar

from pydantic import BaseModel, Field

from m3d_agents.backends.transports.shaping import GrammarField, RequestShaping
from m3d_agents.config_types import Settings
from m3d_agents.errors import BackendError
from m3d_agents.registry import Registry

if TYPE_CHECKING:
    from autogen_core.models import ChatCompletionClient, ModelInfo


class LocalServerSettings(Settings):
    """How the embedded llama.cpp server is started."""

    model_path: Path | None = Field(None, description="a GGUF file; default: the packaged 270M model")
    n_ctx: int = Field(8192, gt=0, le=1_048_576, description="the context window in tokens, prompt and answer together")
    n_threads: int | None = Field(
        None, gt=0, le=1024, description="CPU threads the server uses; None: half the CPUs, at most four, since llama.cpp's "
        "threads wait for one another and stall when another job takes a core (m3d_agents/backends/local_server.py)"
    )
    startup_timeout_s: float = Field(180.0, gt=0, description="how long the server may take to load its model and answer")
    slots: int = Field(
        1, gt=0, description="requests the server answers at once: llama-cpp-python's server answers one at a time, so "
        "more sent at once would only wait there, with their deadlines running; calls beyond this wait on our side, "
        "where no deadline counts"
    )
    answer_tokens: int = Field(
        256, gt=0, description="the most tokens of any one answer, whatever a configuration asks: the 270M model given "
        "more tends to repeat itself up to the limit, minutes of a shared CPU per turn"
    )
    prose_sentences: int = Field(
        3, gt=0, description="in a turn format the server decodes under a grammar, the most sentences of its free "
        "prose: a turn that starts to recite its prompt or repeat itself is stopped after them"
    )

    def answer_identity(self) -> dict[str, int]:
        """The settings that change what the server answers (for the response cache's key)."""
        return {"answer_tokens": self.answer_tokens, "prose_sentences": self.prose_sentences}


@dataclass(frozen=True)
class ClientSettings:
    """Everything a chat client of one backend is built from, resolved from its configuration by the factory."""

    base_url: str | None
    """Where calls go; None for a kind that names no endpoint (one whose client reaches its model another way)."""
    model: str
    model_info: ModelInfo
    api_key: str | None
    temperature: float
    max_tokens: int | None
    seed: int | None
    timeout_s: float
    max_retries: int
    restart_wait_s: float
    """How long a call keeps trying a server that refuses connections (:mod:`~m3d_agents.backends.transports.outage`)."""
    context_window: int | None
    shaping: RequestShaping
    max_answer_bytes: int
    transport: Literal["http", "sdk"]
    config: BaseModel
    """The backend's whole configuration, for a kind whose settings model adds fields of its own."""


class BackendKind:
    """One kind of model server. Subclass it, set what differs, and register it with :func:`backend_kind`.

    The class attributes are what the configuration's properties read (``model_name``, ``key_env``,
    ``endpoint()``, ``has_vision``, ``grammar_field``), so a kind is described in one place.
    """

    name: str = ""
    default_model: ClassVar[str] = ""
    """The model sent with every call when the configuration names none."""
    key_env: ClassVar[str | None] = None
    """The variable this kind's key is read from unless ``api_key_env`` names another: a key only ever goes to the
    kind of server it was made for."""
    requires_key: ClassVar[bool] = False
    """A backend of this kind without its key fails when it is built, naming the variable."""
    endpoint_env: ClassVar[str | None] = None
    """The variable that gives the endpoint when the configuration gives no ``base_url``."""
    default_base_url: ClassVar[str | None] = None
    """The endpoint when neither names one; None: the kind starts its own server (the embedded one)."""
    sees_images: ClassVar[bool] = True
    """Whether the model sees images unless ``vision`` says otherwise."""
    told_vision: ClassVar[bool | None] = None
    """What AutoGen is told about images whatever ``vision`` says (the embedded model never sees them, GPT-4o always
    does); None: what ``vision`` says."""
    grammar: ClassVar[GrammarField] = "none"
    """Where the server takes a grammar (``grammar: auto``)."""
    strict_schemas: ClassVar[bool] = True
    """Whether a schema-constrained answer is asked with every keyword of the schema (OpenAI's strict mode refuses some)."""
    probes_checkpoint: ClassVar[bool] = False
    """Whether the served weights can change behind one model name, so the response cache asks the server which it serves."""
    embedded: ClassVar[bool] = False
    """The embedded server: started by the run when no endpoint names a running one, with the ``local:`` settings."""
    self_hosted: ClassVar[bool] = False
    """The model runs on the user's own machines, so its calls cost nothing per token (prices.py)."""
    defaults: ClassVar[dict[str, Any]] = {}
    """Settings of the backend that ``--backend <kind>`` names when the config file defines no backend of that name."""
    settings: ClassVar[type[BaseModel] | None] = None
    """The model a backend of this kind is configured with, when it adds fields to
    :class:`~m3d_agents.backends.config.BackendConfig` (a subclass of it); None: ``BackendConfig`` itself."""
    family: ClassVar[str] = "unknown"
    function_calling: ClassVar[bool] = True
    json_output: ClassVar[bool] = True
    structured_output: ClassVar[bool] = True
    multiple_system_messages: ClassVar[bool] = False

    def model_info(self, vision: bool) -> ModelInfo:
        """What AutoGen is told the model can do."""
        from autogen_core.models import ModelInfo

        return ModelInfo(
            vision=vision if self.told_vision is None else self.told_vision, function_calling=self.function_calling, json_output=self.json_output, family=self.family,
            structured_output=self.structured_output, multiple_system_messages=self.multiple_system_messages,
        )

    def client(self, settings: ClientSettings) -> ChatCompletionClient:
        """The chat client: our lean OpenAI-compatible one (``transport: http``), or AutoGen's over the OpenAI SDK
        (``transport: sdk``). A kind that speaks another API returns its own ``ChatCompletionClient`` here."""
        if settings.base_url is None:
            raise BackendError(f"a backend of kind {self.name!r} needs an endpoint: set its base_url")
        arguments: dict[str, Any] = {
            "base_url": settings.base_url, "model": settings.model, "model_info": settings.model_info,
            "api_key": settings.api_key, "temperature": settings.temperature, "max_tokens": settings.max_tokens,
            "seed": settings.seed, "timeout_s": settings.timeout_s, "max_retries": settings.max_retries,
            "restart_wait_s": settings.restart_wait_s, "context_window": settings.context_window, "shaping": settings.shaping,
            "max_answer_bytes": settings.max_answer_bytes,
        }
        if settings.transport == "http":
            from m3d_agents.backends.transports.lean_http import OpenAICompatibleClient

            return OpenAICompatibleClient(**arguments)
        # Imported here: the OpenAI SDK adds about half a second to the start of every command that never uses it.
        from m3d_agents.backends.transports.sdk import SdkClient

        return SdkClient(**arguments)


BACKEND_KINDS: Registry[BackendKind] = Registry("backend kind", field="kind", group="m3d_agents.backends")
"""Every backend kind by name; the built-in ones are declared below, others come from installed packages."""

K = TypeVar("K", bound=type[BackendKind])


def backend_kind(name: str) -> Callable[[K], K]:
    """Register a kind class under ``name`` (one instance serves every backend of the kind)."""
    return BACKEND_KINDS.register_instance(name)


@backend_kind("local")
class Local(BackendKind):
    """The embedded llama.cpp server with a small packaged model: no GPU, no key, text only."""

    default_model = "gemma3-270m-q4_k_m"
    endpoint_env = "M3D_LOCAL_BASE_URL"
    sees_images = False
    told_vision = False
    grammar = "grammar"
    embedded = True
    self_hosted = True
    # A CPU-only model on a shared machine can take minutes on one long answer, so one attempt may use the whole deadline.
    defaults = {"timeout_s": 300.0, "deadline_s": 300.0}
    function_calling = False
    structured_output = False


@backend_kind("vllm")
class Vllm(BackendKind):
    """A vLLM server (OpenAI-compatible), such as one serving Qwen3-VL."""

    default_model = "Qwen/Qwen3-VL-8B-Instruct"
    key_env = "M3D_VLLM_API_KEY"
    endpoint_env = "M3D_VLLM_BASE_URL"
    default_base_url = "http://127.0.0.1:8000/v1"
    grammar = "structured_outputs"
    probes_checkpoint = True
    self_hosted = True


@backend_kind("openai")
class OpenAI(BackendKind):
    """The hosted OpenAI API (GPT-4o)."""

    default_model = "gpt-4o"
    key_env = "OPENAI_API_KEY"
    requires_key = True
    default_base_url = "https://api.openai.com/v1"
    strict_schemas = False
    told_vision = True
    family = "gpt-4o"
    multiple_system_messages = True
