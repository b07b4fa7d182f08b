"""Retrieval settings, as a debate configuration or a config file carries them."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from retrieval.fetch import FetchLimits
from retrieval.store import StoreMode

ReverseProviderName = Literal["google_vision", "serpapi_lens"]
WebProviderName = Literal["serper", "duckduckgo"]


class SummarySettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    max_chars: int = Field(700, ge=100, le=4000, description="upper bound on one summary")
    page_chars: int = Field(6000, ge=500, description="how much of a page the summariser reads")
    non_english: Literal["translate", "exclude"] = Field(
        "translate", description="translate: the summary is written in English; exclude: the page is dropped"
    )


class LeakageSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    extra_factcheck_domains: list[str] = Field(default_factory=list)
    drop_factcheck_paths: bool = Field(True, description="drop pages in a fact-check section of a news site (reuters.com/fact-check/...)")
    drop_claim_review: bool = True
    drop_after_claim_date: bool = True


class RetrievalConfig(BaseModel):
    """Which providers answer, how pages are fetched, and how evidence is filtered and stored."""

    model_config = ConfigDict(extra="forbid")

    reverse_image: list[ReverseProviderName] = Field(default_factory=lambda: list[ReverseProviderName](["google_vision"]))
    web_search: list[WebProviderName] = Field(default_factory=lambda: list[WebProviderName](["duckduckgo"]))
    caption_search: bool = Field(True, description="also search the web for the post's text")
    max_pages: int = Field(5, ge=0, description="pages scraped per sample (LLM-Consensus reads the top few)")
    max_page_chars: int = Field(20_000, gt=0)
    query_results: int = Field(10, ge=1, description="results asked of each web provider per query (EvidencePipeline.answer)")
    per_query_items: int = Field(3, ge=1, description="evidence items kept per query (EvidencePipeline.answer)")
    public_image_url: str | None = Field(
        None,
        description="template such as 'https://host/images/{sha256}.jpg' for providers that need a public "
        "image URL (SerpAPI Google Lens)",
    )
    fetch: FetchLimits = Field(default_factory=FetchLimits)
    store_path: Path | None = Field(None, description="default: <cache dir>/evidence.sqlite")
    store_mode: StoreMode = "record"
    summary: SummarySettings = Field(default_factory=SummarySettings)
    leakage: LeakageSettings = Field(default_factory=LeakageSettings)
    reliability_list: Path | None = Field(None, description="a CSV of domain,rating,note that overrides the shipped list")
    judge_unknown_domains: bool = Field(True, description="ask the model about domains that no list rates")
    wikipedia_language: str = "en"
