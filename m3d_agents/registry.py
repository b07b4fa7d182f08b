"""One registry helper for every kind of plug-in: strategies, debate protocols, turn policies,
rewards, critics, data set loaders, search providers and backend kinds.

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

A registry made with an entry-point ``group`` also finds plug-ins that other packages install: when
a name is looked up and not registered, the installed distributions' entry points of that group
with that name are loaded (importing a module whose decorator registers the plug-in, or naming the
plug-in itself, which is then registered under the entry point's name). Nothing is loaded before a
name asks for it, so an installed plug-in costs no start-up time, and a broken one fails only the
run that names it, with one line that says which distribution's entry point could not be loaded.
"""

from __future__ import annotations

import importlib
from contextlib import contextmanager
from functools import lru_cache
from importlib.metadata import entry_points
from typing import Any, Callable, Generic, Iterator, Sequence, TypeVar

from m3d_agents.errors import InputError

T = TypeVar("T")
P = TypeVar("P")
C = TypeVar("C", bound=type[Any])


@lru_cache(maxsize=None)
def offered(group: str) -> tuple[str, ...]:
    """The names installed packages offer under the entry-point group ``group``, read once per process (reading
    the installed distributions takes tens of milliseconds, and a run lists names more than once)."""
    return tuple(point.name for point in entry_points(group=group))


class Registry(Generic[T]):
    """Named plug-ins of one kind; ``field`` is what an error names (``strategy``, ``turn_policy.kind``);
    ``group``, the entry-point group other packages register plug-ins of this kind under."""

    def __init__(self, kind: str, field: str | None = None, plugins: Sequence[str] = (),
                 group: str | None = None) -> None:
        self.kind = kind
        self.field = field or kind
        self.plugins = tuple(plugins)
        """Modules whose import registers the built-in entries, imported on the first lookup."""
        self.group = group
        self._loaded = not self.plugins
        self._entries: dict[str, T] = {}
        self._summaries: dict[str, str] = {}

    def import_on_lookup(self, *modules: str) -> None:
        """Name more modules whose import registers built-in entries, imported on the next lookup: how a package
        above the registry's own declares the built-ins it holds (:mod:`debates` names its strategies' diagnostics
        models for :data:`m3d_agents.diagnostics.DIAGNOSTICS_MODELS`, which a verdict read back looks up)."""
        added = tuple(module for module in modules if module not in self.plugins)
        if added:
            self.plugins += added
            self._loaded = False

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

    def register_instance(self, name: str) -> Callable[[C], C]:
        """A decorator that registers one instance of the decorated class under ``name``, with its ``name`` set
        (a plug-in that holds no state, so one object serves every use: a debate protocol, a backend kind)."""

        def decorate(cls: C) -> C:
            instance = cls()
            instance.name = name
            self.add(name, instance, (cls.__doc__ or "").strip().split("\n")[0])
            return cls

        return decorate

    def add(self, name: str, entry: T, summary: str = "") -> None:
        if name in self._entries and self._entries[name] is not entry:
            raise ValueError(f"a {self.kind} named {name!r} is already registered")
        self._entries[name] = entry
        self._summaries[name] = summary or (getattr(entry, "__doc__", None) or "").strip().split("\n")[0]

    def get(self, name: str) -> T:
        self._load()
        if name not in self._entries:
            self._load_installed(name)
        try:
            return self._entries[name]
        except KeyError:
            raise InputError(self.field, f"unknown {self.kind} {name!r}; known: {', '.join(self.names())}") from None

    def knows(self, name: str) -> bool:
        """Whether ``name`` is registered, or an installed plug-in registers it once loaded (which this loads)."""
        self._load()
        if name not in self._entries:
            self._load_installed(name)
        return name in self._entries

    def _load_installed(self, name: str) -> None:
        """Load the entry points of this registry's group named ``name``, if any (see the module docstring)."""
        if self.group is None:
            return
        for point in entry_points(group=self.group, name=name):
            try:
                loaded = point.load()
            except Exception as exc:  # noqa: BLE001 - a broken plug-in fails the lookup that named it, in one line
                owner = f" of {point.dist.name}" if point.dist is not None else ""
                problem = " ".join(str(exc).split())[:200] or type(exc).__name__
                raise InputError(self.field, f"the {self.kind} {name!r} is installed (entry point {point.value}{owner}) "
                                             f"but could not be loaded: {problem}") from None
            if name not in self._entries:
                self.add(name, loaded)

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        self._load()
        return iter(list(self._entries))

    def names(self) -> list[str]:
        """The registered names, then those that installed plug-ins offer and have not yet been loaded."""
        self._load()
        installed = offered(self.group) if self.group is not None else ()
        return list(dict.fromkeys([*self._entries, *installed]))

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
