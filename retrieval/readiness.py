"""Which providers of a ``retrieval:`` block can run now, read from the environment without asking any.

A provider without its key is left out of a run and reported (:mod:`retrieval.runpath`); this says
so before the run, so a plan can tell that a table's rows will gather no evidence, or which
evidence they will lack, before anyone spends a GPU hour. Keys are only tested for presence.
"""

from __future__ import annotations

import os
from typing import Literal, Mapping

from pydantic import BaseModel, Field

from m3d_agents.verdict import RetrievalMode
from retrieval.config import RetrievalConfig

Use = Literal["reverse_image", "web_search", "wikipedia"]
USES: dict[Use, str] = {
    "reverse_image": "the pages that show the image",
    "web_search": "web search results for the post's text",
    "wikipedia": "Wikipedia articles",
}
"""What each use of a provider brings as evidence."""


class ProviderReadiness(BaseModel):
    provider: str
    use: Use
    gathers_first: bool = Field(description="asked before the agents start (its results are the post's evidence), "
                                            "not only when an agent searches")
    ready: bool
    why: str | None = Field(None, description="why it cannot run: the key to set, the setting to give")


def _key_variables() -> dict[str, str]:
    from retrieval.providers import google_vision, serpapi_lens, serper

    return {"google_vision": google_vision.KEY_VARIABLE, "serpapi_lens": serpapi_lens.KEY_VARIABLE,
            "serper": serper.KEY_VARIABLE}


def readiness(settings: RetrievalConfig, mode: RetrievalMode, env: Mapping[str, str] | None = None) -> list[ProviderReadiness]:
    """Every provider the block lists, with whether it can run in ``mode`` (replay needs no key: nothing is asked)."""
    environment = os.environ if env is None else env
    keys = _key_variables()

    def check(provider: str) -> str | None:
        problems = []
        variable = keys.get(provider)
        if mode != "replay" and variable and not environment.get(variable, "").strip():
            problems.append(f"no {variable}")
        if provider == "serpapi_lens" and not settings.public_image_url:
            problems.append("no public_image_url")
        return " and ".join(problems) or None

    found = [ProviderReadiness(provider=name, use="reverse_image", gathers_first=True, ready=(why := check(name)) is None,
                               why=why) for name in settings.reverse_image]
    found += [ProviderReadiness(provider=name, use="web_search", gathers_first=settings.caption_search,
                                ready=(why := check(name)) is None, why=why) for name in settings.web_search]
    found.append(ProviderReadiness(provider="wikipedia", use="wikipedia", gathers_first=settings.wikipedia, ready=True))
    return found
