"""Search providers registered like every other plug-in: a name, the list it may be named in, and a builder.

A configuration names providers in ``retrieval.reverse_image`` (reverse image search) and
``retrieval.web_search`` (web search); Wikipedia is the one ``text`` provider, searched for the
post's text when ``retrieval.wikipedia`` is on. Each name is checked against this registry when the
configuration is loaded, so a misspelt provider is one line naming the field, and the run opens
each provider through its builder (:mod:`retrieval.runpath`). The built-in providers are declared
in :mod:`retrieval.providers`; a package of its own registers one under the
``m3d_agents.search_providers`` entry-point group (see ``docs/extending.md``).

A builder gets a :class:`ProviderSetup`: the run's guarded fetcher, the endpoint the configuration
or the environment gives, and the retrieval settings. A provider that cannot run in this run (no
key, a setting it needs) raises :class:`ProviderUnavailable` with the reason, which every sample's
evidence report then states; the run goes on without it. Declaring a provider imports nothing
heavy: a builder imports its client when the run builds it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, Literal, TypeVar, Union

from pydantic import BaseModel

from m3d_agents.errors import InputError
from m3d_agents.registry import Registry

if TYPE_CHECKING:
    from retrieval.fetch import Fetcher
    from retrieval.providers.base import ReverseImageSearch, WebSearch

ProviderRole = Literal["reverse_image", "web", "text"]
ROLE_WORDS: dict[ProviderRole, str] = {"reverse_image": "reverse image search", "web": "web search", "text": "text search"}


class ProviderUnavailable(Exception):
    """A provider cannot run in this run; the message says why and what to do (``no key: set SERPER_API_KEY``)."""


@dataclass(frozen=True)
class ProviderSetup:
    """What a provider is built from."""

    name: str
    fetcher: Fetcher
    """The run's fetcher: every request a provider makes goes through the fetch guards and their limits."""
    configured_endpoint: str | None
    """``retrieval.endpoints.<endpoint name>`` as configured; None: not set."""
    endpoint_name: str
    replay: bool
    """The run answers from the evidence store alone: nothing is asked, so no key is needed."""
    retrieval: BaseModel
    """The configuration's whole ``retrieval:`` block (a :class:`~retrieval.config.RetrievalConfig`)."""

    def endpoint(self, public: str) -> str:
        """The provider's API URL: the configured one, else ``M3D_<ENDPOINT NAME>_ENDPOINT``, else ``public``.

        Pointing a provider elsewhere does not loosen the fetch guards: a private or loopback address
        is still refused unless the guard was built to allow it.
        """
        named = os.environ.get(f"M3D_{self.endpoint_name.upper()}_ENDPOINT", "").strip()
        return self.configured_endpoint or named or public

    def require_key(self, variable: str) -> None:
        """Raise :class:`ProviderUnavailable` unless ``variable`` holds a key (or the run only replays)."""
        if not self.replay and not os.environ.get(variable, "").strip():
            raise ProviderUnavailable(f"no key: set {variable}")


Provider = Union["ReverseImageSearch", "WebSearch"]
Builder = Callable[[ProviderSetup], Provider]


@dataclass(frozen=True)
class SearchProvider:
    """One registered provider: its name, the list it may be named in, where its endpoint is set, and its builder."""

    name: str
    role: ProviderRole
    build: Builder
    endpoint_name: str
    """Its key under ``retrieval.endpoints`` and in ``M3D_<ENDPOINT NAME>_ENDPOINT`` (SerpAPI's Lens: ``serpapi``)."""


SEARCH_PROVIDERS: Registry[SearchProvider] = Registry("search provider", group="m3d_agents.search_providers")
"""Every search provider by name; the built-in ones are declared in :mod:`retrieval.providers`."""

B = TypeVar("B", bound=Builder)


def search_provider(name: str, role: ProviderRole, *, endpoint_name: str | None = None) -> Callable[[B], B]:
    """Register ``build`` (a function of a :class:`ProviderSetup`) as the provider ``name`` of ``role``;
    its docstring's first line is what ``m3d`` lists it with."""

    def decorate(build: B) -> B:
        summary = (build.__doc__ or "").strip().split("\n")[0]
        SEARCH_PROVIDERS.add(name, SearchProvider(name, role, build, endpoint_name or name), summary)
        return build

    return decorate


def provider_named(name: str, role: ProviderRole) -> SearchProvider:
    """The provider ``name``, checked to be one of ``role``; a ``ValueError`` in one line otherwise (for validators)."""
    try:
        provider = SEARCH_PROVIDERS.get(name)
    except InputError as exc:
        raise ValueError(exc.problem) from None
    if provider.role != role:
        same = [n for n in SEARCH_PROVIDERS.names() if n in SEARCH_PROVIDERS and SEARCH_PROVIDERS.get(n).role == role]
        raise ValueError(f"{name!r} is a {ROLE_WORDS[provider.role]} provider, not a {ROLE_WORDS[role]} one; "
                         f"{ROLE_WORDS[role]} providers: {', '.join(same)}")
    return provider
