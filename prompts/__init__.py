"""Prompt templates, one file per role and framing, grouped in folders by concern
(``common/``, ``checker/``, ``debate/``, ``cascade/``, ``turns/``, ``tools/``, ``retrieval/``), so
that they can be read and edited as text. A template is named by its path: ``load("debate/judge_system")``.

Templates use ``$name`` placeholders (``string.Template``): braces in JSON examples need no escaping.
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from importlib.resources.abc import Traversable
from string import Template


@lru_cache(maxsize=None)
def load(name: str) -> str:
    """The raw text of ``prompts/<name>.md``; ``name`` may hold folders (``debate/judge_system``)."""
    path = resources.files(__name__).joinpath(*f"{name}.md".split("/"))
    if not path.is_file():
        raise FileNotFoundError(f"no prompt template named {name!r} in the prompts package")
    return path.read_text(encoding="utf-8").strip()


def render(name: str, **values: object) -> str:
    """Fill a template; a missing placeholder raises instead of leaking ``$name`` into a prompt."""
    return Template(load(name)).substitute({k: str(v) for k, v in values.items()})


def names() -> list[str]:
    """Every template name, folders included (``debate/judge_system``)."""
    found: list[str] = []

    def walk(folder: Traversable, prefix: str) -> None:
        for entry in folder.iterdir():
            if entry.is_dir():
                walk(entry, f"{prefix}{entry.name}/")
            elif entry.name.endswith(".md"):
                found.append(prefix + entry.name[:-3])

    walk(resources.files(__name__), "")
    return sorted(found)
