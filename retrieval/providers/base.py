"""What providers return, and the protocols the pipeline and the query answerer depend on."""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from m3d_agents.errors import BackendError
from m3d_agents.media.images import PreparedImage

MatchKind = Literal["full", "partial", "similar", "page", "web"]


class SearchHit(BaseModel):
    """One result: a page, and where a provider saved it, a snapshot of its HTML."""

    url: str
    title: str | None = None
    snippet: str | None = None
    provider: str
    rank: int = Field(0, ge=0)
    match: MatchKind = "web"
    image_url: str | None = None
    published: date | None = None
    snapshot: Path | None = Field(None, description="saved HTML of the page in a recorded trace")


class ReverseImageResult(BaseModel):
    """Pages showing the image, plus what the provider thinks the image is."""

    provider: str
    pages: list[SearchHit] = Field(default_factory=list)
    best_guess: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)


class ImageQuery(BaseModel):
    """An image to search for; ``public_url`` only for providers that cannot take the bytes."""

    model_config = {"arbitrary_types_allowed": True}

    image: PreparedImage
    public_url: str | None = None


@runtime_checkable
class ReverseImageSearch(Protocol):
    name: str

    async def search_image(self, query: ImageQuery) -> ReverseImageResult: ...


@runtime_checkable
class WebSearch(Protocol):
    name: str

    async def search(self, query: str, limit: int = 10) -> list[SearchHit]: ...


@runtime_checkable
class DatedWebSearch(Protocol):
    """A web search that can be limited to pages published up to a date (Serper's Google date range)."""

    name: str

    async def search_before(self, query: str, limit: int, before: date) -> list[SearchHit]: ...


async def search_web(provider: WebSearch, query: str, limit: int, before: date | None = None) -> list[SearchHit]:
    """``provider``'s results for ``query``, limited to pages up to ``before`` where it can limit them."""
    if before is not None and isinstance(provider, DatedWebSearch):
        return await provider.search_before(query, limit, before)
    return await provider.search(query, limit)


def require_key(variable: str, provider: str) -> str:
    """The API key in ``variable``, or a clear error naming the variable to set."""
    value = os.environ.get(variable, "").strip()
    if not value:
        raise BackendError(f"the {provider} provider needs an API key in the environment variable {variable}")
    return value
