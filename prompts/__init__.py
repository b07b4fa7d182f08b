"""Prompt templates, one file per role and framing, so that they can be read and edited as text.

Templates use ``$name`` placeholders (``string.Template``): braces in JSON examples need no escaping.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from string import Template


@lru_cache(maxsize=None)
def load(name: str) -> str:
    """The raw text of ``prompts/<name>.md``."""
    path = resources.files(__name__).joinpath(f"{name}.md")
    if not path.is_file():
        raise FileNotFoundError(f"no prompt template named {name!r} in the prompts package")
    return path.read_text(encoding="utf-8").strip()


def render(name: str, **values: object) -> str:
    """Fill a template; a missing placeholder raises instead of leaking ``$name`` into a prompt."""
    return Template(load(name)).substitute({k: str(v) for k, v in values.items()})


def names() -> list[str]:
    return sorted(p.name[:-3] for p in resources.files(__name__).iterdir() if p.name.endswith(".md"))
