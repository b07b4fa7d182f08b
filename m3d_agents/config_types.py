"""The bounded types that every configuration uses for the same kind of setting, and their base model.

A temperature, an answer's token cap, a seed or the number of re-asks of an unreadable answer
means the same thing in a strategy's configuration, a debate seat, a turn policy and a backend,
so each is bounded once here: a value that no server accepts (a temperature of 7, a cap of a
billion tokens, a negative seed) is one clear line when the file is loaded, never a failed run.

Every configuration model extends :class:`Settings`: unknown keys are errors (a typo is not
silently ignored), numbers must be finite, and a key that was renamed says its new name.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Mapping

from pydantic import BaseModel, ConfigDict, Field, model_validator

Temperature = Annotated[float, Field(ge=0.0, le=2.0)]
"""Sampling temperature, as OpenAI-compatible servers accept it."""

MaxTokens = Annotated[int, Field(ge=16, le=131_072)]
"""A cap on one answer's tokens: below 16 no structured answer fits; above 128k no served model goes."""

SEED_MAX = 2**31 - 1

Seed = Annotated[int, Field(ge=0, le=SEED_MAX)]
"""A seed that every server's ``seed`` parameter and every derived seed (a sample's, a candidate's) accepts."""

ParseRetries = Annotated[int, Field(ge=0, le=5)]
"""Re-asks of a model whose answer cannot be read. Each re-ask is a full model call, and a model that
has failed the format six times in a row will not meet it on the seventh, so more would only cost."""

MAX_LIST_ITEMS = 1000
"""Items in any one list or mapping of a configuration (domains, tools, seats, backends ...): generous for every real
file, and a file asking for ten thousand of something is refused before any of them is validated or run."""

MAX_SEATS = 32
"""Participants of one debate or workflow: each is a model conversation every round; the papers use two to six."""

PARSE_RETRIES_DOC = (
    "how many times a model whose answer cannot be read is asked again (0-5); then the turn or check "
    "is recorded as unreadable"
)


class Settings(BaseModel):
    """The base of every configuration model: unknown keys and non-finite numbers are errors, and a
    renamed key fails with one line that names its new name."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    renamed_settings: ClassVar[Mapping[str, str]] = {}
    """Old key -> new key, for keys a release renamed: an old file fails saying what to write instead."""

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        if isinstance(data, Mapping):
            for old, new in cls.renamed_settings.items():
                if old in data:
                    raise ValueError(f"the setting {old!r} is now called {new!r}; rename it in the file")
            # Refused before any item is validated, so ten thousand of something cost nothing.
            for key, value in data.items():
                if isinstance(value, (list, dict)) and len(value) > MAX_LIST_ITEMS:
                    raise ValueError(f"{key}: {len(value)} items, over the limit of {MAX_LIST_ITEMS} for one list in a "
                                     "configuration")
        return data
