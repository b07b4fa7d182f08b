"""What a model call costs, per backend, in US dollars.

Self-hosted backends (the embedded llama.cpp model, a vLLM server) have no per-token bill, so
they cost zero here; the GPU time behind them is not counted. Hosted models are priced per million
input and output tokens. A model we have no price for gets no cost at all (reported as unknown),
never a guessed one; ``--prices FILE`` adds or overrides entries.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from m3d_agents.backends.config import BackendConfig
from m3d_agents.errors import InputError
from m3d_agents.safe_yaml import load_yaml


class Price(BaseModel):
    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)

    def cost(self, prompt_tokens: int, completion_tokens: int) -> float:
        return (prompt_tokens * self.input_per_mtok + completion_tokens * self.output_per_mtok) / 1_000_000


FREE = Price(input_per_mtok=0.0, output_per_mtok=0.0)

# OpenAI list prices (standard tier, USD per 1M tokens).
HOSTED: dict[str, Price] = {
    "gpt-4o": Price(input_per_mtok=2.50, output_per_mtok=10.00),
    "gpt-4o-mini": Price(input_per_mtok=0.15, output_per_mtok=0.60),
    "gpt-4.1": Price(input_per_mtok=2.00, output_per_mtok=8.00),
    "gpt-4.1-mini": Price(input_per_mtok=0.40, output_per_mtok=1.60),
    "gpt-4.1-nano": Price(input_per_mtok=0.10, output_per_mtok=0.40),
}


class PriceTable(BaseModel):
    models: dict[str, Price] = Field(default_factory=lambda: dict(HOSTED))

    def for_backend(self, config: BackendConfig) -> Price | None:
        """Zero for self-hosted kinds; the model's entry (dated snapshots fall back to their family) for hosted ones."""
        name = config.model_name
        if name in self.models:
            return self.models[name]
        if config.spec.self_hosted:
            return FREE
        for known in sorted(self.models, key=len, reverse=True):
            if name.startswith(known + "-"):
                return self.models[known]
        return None


def load_price_table(path: Path | None) -> PriceTable:
    table = PriceTable()
    if path is None:
        return table
    if not path.exists():
        raise InputError("prices", f"{path} does not exist")
    if not path.is_file():
        raise InputError("prices", f"{path} is not a file")
    expected = "expected 'model: {input_per_mtok: X, output_per_mtok: Y}' entries"
    try:
        raw = load_yaml(path.read_text(encoding="utf-8"), str(path)) or {}
    except InputError as exc:
        raise InputError("prices", f"{exc} ({expected})") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError("prices", f"cannot read {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if not isinstance(raw, dict):
        raise InputError("prices", f"{path}: {expected}, not a {type(raw).__name__}")
    extra = {}
    for name, value in raw.items():
        try:
            extra[str(name)] = Price.model_validate(value)
        except ValidationError as exc:
            problem = InputError.from_validation(exc, str(path))
            raise InputError("prices", f"{name}.{problem} ({expected})") from None
    table.models.update(extra)
    return table
