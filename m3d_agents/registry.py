"""One registry helper for every kind of plug-in: strategies, debate protocols, turn policies,
rewards, critics and data set loaders.

Why one helper: a newcomer who has added one kind of plug-in knows how to add every other kind,
an unknown name fails the same way everywhere (an :class:`~m3d_agents.errors.InputError` that
names the field and lists what is known), and ``m3d`` can list what is installed from the
registries themselves. Built-in plug-ins register when their module is imported, and a registry
names the modules that hold its built-ins (``plugins``): it imports them on its first lookup, so
no lookup ever depends on an import that happened to run earlier, and a process that never looks
a kind up never imports its plug-ins (``m3d config`` reads configurations without importing the
model clients, tools and AutoGen that running them takes).

    STRATEGIES: Registry[Strategy] = Registry("strategy", plugins=("debates.strategies.builtin",))

    @STRATEGIES.register("self-consistency")
    class SelfConsistency: ...
"""

from __future__ import annotations

import importlib
from contextlib import contextmanager
from typing import Callable, Generic, Iterator, Sequence, TypeVar

from m3d_agents.errors import InputError

T = TypeVar("T")
P = TypeVar("P")


class Registry(Generic[T]):
    """Named plug-ins of one kind; ``field`` is what an error names (``strategy``, ``turn_policy.kind``)."""

    def __init__(self, kind: str, field: str | None = None, plugins: Sequence[str] = ()) -> None:
        self.kind = kind
        self.field = field or kind
        self.plugins = tuple(plugins)
        """Modules whose import registers the built-in entries, imported on the first lookup."""
        self._loaded = not self.plugins
        self._entries: dict[str, T] = {}
        self._summaries: dict[str, str] = {}

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True  # first: a plug-in module may look entries up while it registers its own
        for module in self.plugins:
            importlib.import_module(module)

    def register(self, name: str, summary: str = "") -> Callable[[P], P]:
        """A decorator that registers what it decorates under ``name`` (a class, a function or an object)."""

        def decorate(entry: P) -> P:
            self.add(name, entry, summary)  # type: ignore[arg-type]
            return entry

        return decorate

    def add(self, name: str, entry: T, summary: str = "") -> None:
        if name in self._entries and self._entries[name] is not entry:
            raise ValueError(f"a {self.kind} named {name!r} is already registered")
        self._entries[name] = entry
        self._summaries[name] = summary or (getattr(entry, "__doc__", None) or "").strip().split("\n")[0]

    def get(self, name: str) -> T:
        self._load()
        try:
            return self._entries[name]
        except KeyError:
            raise InputError(self.field, f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}") from None

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        self._load()
        return iter(list(self._entries))

    def names(self) -> list[str]:
        self._load()
        return list(self._entries)

    def summary(self, name: str) -> str:
        self.get(name)
        return self._summaries[name]

    @contextmanager
    def overridden(self, name: str, entry: T) -> Iterator[None]:
        """Replace an entry for the duration of a block (tests, or a run that swaps in its own)."""
        self._load()
        missing = object()
        previous = self._entries.get(name, missing)
        self._entries[name] = entry
        try:
            yield
        finally:
            if previous is missing:
                del self._entries[name]
            else:
                self._entries[name] = previous  # type: ignore[assignment]
