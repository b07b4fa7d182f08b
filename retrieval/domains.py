"""Host names and registered domains, computed offline.

Rules about sites (fact-checkers, reliability ratings) must match whole domain labels, never
substrings: a substring rule meant for one site silently hits unrelated ones. The public suffix
list bundled with ``tldextract`` decides where the registered domain starts; the library would
otherwise try to download a fresh list at run time, which this project never does.
"""

from __future__ import annotations

from functools import lru_cache
from urllib.parse import urlsplit

import tldextract
import tldextract.tldextract as _tldextract_module

OFFLINE_EXTRACTOR = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


def use_offline_suffix_list() -> None:
    """Make every ``tldextract.extract`` call in the process (newspaper3k's too) use the bundled list."""
    _tldextract_module.TLD_EXTRACTOR = OFFLINE_EXTRACTOR


def host_of(url: str) -> str:
    """The lower-case host of ``url`` without ``www.``; empty when the URL has none."""
    host = (urlsplit(url).hostname or "").lower().rstrip(".")
    return host[4:] if host.startswith("www.") else host


@lru_cache(maxsize=4096)
def registered_domain(host: str) -> str:
    """``news.bbc.co.uk`` -> ``bbc.co.uk``; an IP address or a bare name is returned unchanged."""
    parts = OFFLINE_EXTRACTOR(host.lower())
    if parts.domain and parts.suffix:
        return f"{parts.domain}.{parts.suffix}"
    return host.lower()


def domain_candidates(host: str) -> list[str]:
    """The host and each parent down to its registered domain, most specific first.

    ``factcheck.afp.com`` gives ``["factcheck.afp.com", "afp.com"]``, so a list can rate a
    fact-checking desk apart from the news agency that runs it.
    """
    host = host.lower().rstrip(".")
    if host.startswith("www."):
        host = host[4:]
    base = registered_domain(host)
    if not host.endswith(base):
        return [host]
    labels = host[: len(host) - len(base)].rstrip(".").split(".") if host != base else []
    candidates = [".".join([*labels[i:], base]) for i in range(len(labels)) if labels[i]]
    return [*candidates, base]
