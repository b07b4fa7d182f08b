"""Search providers: reverse image search, web search, Wikipedia, a local corpus and recorded traces.

Each provider is a real client of a real service (or of files on disk), behind the small protocols
in :mod:`retrieval.providers.base`. Keys come from the environment; a provider whose key is missing
says which variable to set.

The providers a configuration can name are registered here (:mod:`retrieval.providers.registry`),
each by one builder that imports its client only when a run builds it, so that loading a
configuration never loads an HTTP client. The local corpus and the recorded MR2 trace are not
named in a configuration's provider lists and are opened by the run path itself.

Bing Visual Search is not here: Microsoft retired the Bing Search APIs (including Visual Search)
on 11 August 2025, so there is no endpoint left to call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrieval.providers.registry import ProviderSetup, ProviderUnavailable, search_provider

if TYPE_CHECKING:
    from retrieval.config import RetrievalConfig
    from retrieval.providers.base import ReverseImageSearch, WebSearch


def settings_of(setup: ProviderSetup) -> RetrievalConfig:
    """The run's ``retrieval:`` block, typed (imported here: the configuration module imports the registry)."""
    from retrieval.config import RetrievalConfig

    if not isinstance(setup.retrieval, RetrievalConfig):
        raise TypeError(f"a provider is built from a RetrievalConfig, not a {type(setup.retrieval).__name__}")
    return setup.retrieval


@search_provider("google_vision", "reverse_image")
def google_vision_provider(setup: ProviderSetup) -> ReverseImageSearch:
    """Google Cloud Vision's web detection (GOOGLE_VISION_API_KEY): pages showing the image, entities, a best guess."""
    from retrieval.providers import google_vision

    setup.require_key(google_vision.KEY_VARIABLE)
    return google_vision.GoogleVisionWebDetection(setup.fetcher, endpoint=setup.endpoint(google_vision.ENDPOINT))


@search_provider("serpapi_lens", "reverse_image", endpoint_name="serpapi")
def serpapi_lens_provider(setup: ProviderSetup) -> ReverseImageSearch:
    """Google Lens through SerpAPI (SERPAPI_API_KEY); needs retrieval.public_image_url, as it takes images by URL only."""
    from retrieval.providers import serpapi_lens

    if not settings_of(setup).public_image_url:
        raise ProviderUnavailable(serpapi_lens.NEEDS_PUBLIC_URL)
    setup.require_key(serpapi_lens.KEY_VARIABLE)
    return serpapi_lens.SerpApiGoogleLens(setup.fetcher, endpoint=setup.endpoint(serpapi_lens.ENDPOINT))


@search_provider("serper", "web")
def serper_provider(setup: ProviderSetup) -> WebSearch:
    """Google web results through Serper (SERPER_API_KEY), limited to the claim date where asked."""
    from retrieval.providers import serper

    setup.require_key(serper.KEY_VARIABLE)
    return serper.SerperSearch(setup.fetcher, endpoint=setup.endpoint(serper.ENDPOINT))


@search_provider("duckduckgo", "web")
def duckduckgo_provider(setup: ProviderSetup) -> WebSearch:
    """DuckDuckGo and its partners through the ddgs library; no key."""
    from retrieval.providers.duckduckgo import DuckDuckGoSearch

    return DuckDuckGoSearch()


@search_provider("wikipedia", "text")
def wikipedia_provider(setup: ProviderSetup) -> WebSearch:
    """Wikipedia's search in the configured edition (retrieval.wikipedia_language), lead sections as evidence."""
    from retrieval.providers.wikipedia import WikipediaSearch

    language = settings_of(setup).wikipedia_language
    return WikipediaSearch(setup.fetcher, language, setup.endpoint(f"https://{language}.wikipedia.org/w/api.php"))
