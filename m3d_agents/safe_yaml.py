"""Reading YAML that a user, or someone who sent the user a file, wrote: bounded in time and memory.

``yaml.safe_load`` refuses Python tags but not aliases. Nine lines of nested aliases ("billion
laughs") make a mapping whose expansion has a billion nodes; the loader itself shares the
objects, but whatever walks the result afterwards (validation, an error message that prints it)
pays for every one of them. So the loader counts, while it composes the document, how many nodes
the aliases stand for, and refuses the document once that passes :data:`MAX_ALIAS_NODES`. Sizes are
memoised per node, so the count costs time linear in the text, however deep the nesting.
Recursive aliases (a node that contains itself) are refused outright.

Two things PyYAML accepts silently are refused too, because each turns a mistake into a setting
nobody chose: a key written twice in one mapping (the later value would win without a word), and
a number that is not finite (``.nan``, ``.inf``: a NaN passes every "at least"/"at most" check
that is written as a comparison, an infinite timeout never ends). So is nesting deeper than any
configuration needs.

The text is scanned and parsed by libyaml's C parser where PyYAML has it (five times faster on the
built-in configurations, which ``m3d config`` reads all of), and composed into nodes by PyYAML's
own composer in Python, where the counting above happens; without libyaml both are PyYAML's Python.
"""

from __future__ import annotations

from typing import Any

import math

import yaml
from yaml.composer import Composer
from yaml.constructor import SafeConstructor
from yaml.resolver import Resolver

from m3d_agents.errors import InputError
from m3d_agents.safe_json import MAX_DEPTH, JsonTooDeep, check_depth

MAX_ALIAS_NODES = 10_000
"""Generous for a configuration (every built-in one uses none); a billion-laughs file passes it at
its third level."""
MAX_YAML_CHARS = 1_000_000
"""A configuration is a few kilobytes (the largest built-in one, 5 kB); parsing a megabyte of YAML already takes seconds."""
MAX_YAML_NODES = 10_000
"""Values, keys, lists and mappings in one document: the largest built-in file has about 430. A file of ten
thousand seats is refused here, while it is parsed, instead of being parsed whole and then run."""


class AliasBombError(yaml.YAMLError):
    pass


class RefusedValue(yaml.MarkedYAMLError):
    """A value PyYAML would accept that this loader refuses (a repeated key, a number that is not finite)."""


try:
    from yaml._yaml import CParser as _Parser  # libyaml's scanner and parser: the events, not the nodes
except ImportError:  # PyYAML built without libyaml
    from yaml.reader import Reader
    from yaml.parser import Parser
    from yaml.scanner import Scanner

    class _Parser(Reader, Scanner, Parser):  # type: ignore[no-redef]
        def __init__(self, stream: str) -> None:
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)


class _BoundedLoader(Composer, _Parser, SafeConstructor, Resolver):
    """The Python composer first, so that its ``compose_node`` (counted below) composes every node; the events come
    from the parser."""

    def __init__(self, stream: str, max_alias_nodes: int) -> None:
        _Parser.__init__(self, stream)
        Composer.__init__(self)
        SafeConstructor.__init__(self)
        Resolver.__init__(self)
        self._max_alias_nodes = max_alias_nodes
        self._nodes = 0
        self._expanded = 0
        self._sizes: dict[int, int] = {}
        self._complete: set[int] = set()

    def compose_node(self, parent: yaml.Node | None, index: Any) -> yaml.Node | None:
        if self.check_event(yaml.AliasEvent):
            event: Any = self.peek_event()
            line = event.start_mark.line + 1
            node = super().compose_node(parent, index)
            if node is not None:
                if id(node) not in self._complete:
                    raise AliasBombError("a recursive alias (a node that contains itself)")
                self._expanded += self._size(node)
                if self._expanded > self._max_alias_nodes:
                    raise AliasBombError(
                        f"aliases expand to more than {self._max_alias_nodes} nodes (near line {line}); "
                        "write the values out instead"
                    )
            return node
        self._nodes += 1
        if self._nodes > MAX_YAML_NODES:
            upcoming: Any = self.peek_event()
            raise AliasBombError(f"more than {MAX_YAML_NODES} values, keys and lists (near line {upcoming.start_mark.line + 1}); a "
                                 "configuration holds a few hundred")
        node = super().compose_node(parent, index)
        if node is not None:
            self._complete.add(id(node))
        return node

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[tuple[str, str], yaml.Node] = {}
        for key_node, _ in node.value:
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = (key_node.tag, key_node.value)
            first = seen.get(key)
            if first is not None:
                raise RefusedValue(f"while reading a mapping (first written on line {first.start_mark.line + 1})",
                                   node.start_mark, f"the key {key_node.value[:60]!r} is written twice", key_node.start_mark)
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)

    def _size(self, node: yaml.Node) -> int:
        """How many nodes ``node`` stands for once every alias inside it is expanded (it is complete)."""
        key = id(node)
        if key not in self._sizes:
            size = 1
            if isinstance(node, yaml.SequenceNode):
                size += sum(self._size(child) for child in node.value)
            elif isinstance(node, yaml.MappingNode):
                size += sum(self._size(k) + self._size(v) for k, v in node.value)
            self._sizes[key] = size
        return self._sizes[key]


def refuse_non_finite(data: Any, origin: str) -> Any:
    """``data``, unless a number in it is not finite: then an error naming the setting's dotted path."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        item, path = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise InputError(path or origin, f"{item} is not a finite number (in {origin})")
        if isinstance(item, dict):
            stack.extend((value, f"{path}.{key}" if path else str(key)) for key, value in item.items())
        elif isinstance(item, list):
            stack.extend((value, f"{path}[{i}]") for i, value in enumerate(item))
    return data


def yaml_problem(exc: yaml.YAMLError) -> str:
    """The problem and where it is, on one line."""
    if isinstance(exc, yaml.MarkedYAMLError) and exc.problem:
        mark = exc.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        return f"{exc.context + ': ' if exc.context else ''}{exc.problem}{where}"
    return " ".join(str(exc).split())


def unreadable_character(exc: yaml.reader.ReaderError, text: str) -> str:
    """A character no YAML file may hold (a NUL, another control character: a binary file named as YAML), on one line."""
    code = exc.character if isinstance(exc.character, int) else ord(str(exc.character)[:1] or "\0")
    line = text.count("\n", 0, exc.position) + 1 if isinstance(exc.position, int) else None
    where = f" on line {line}" if line is not None else ""
    return (f"not valid YAML: it holds the character U+{code:04X}{where}, which YAML does not allow (a binary file, or "
            "control characters pasted into the text); save the configuration as plain UTF-8 text")


def load_yaml(text: str, origin: str, *, max_alias_nodes: int = MAX_ALIAS_NODES) -> Any:
    """The one document in ``text``; an :class:`InputError` naming ``origin`` if it is not valid or too costly."""
    if len(text) > MAX_YAML_CHARS:
        raise InputError(origin, f"{len(text)} characters of YAML, over the limit of {MAX_YAML_CHARS}")
    try:
        # The reader checks every character as the loader is made: a binary file or a control character fails here.
        loader = _BoundedLoader(text, max_alias_nodes)
    except yaml.reader.ReaderError as exc:
        raise InputError(origin, unreadable_character(exc, text)) from None
    try:
        return refuse_non_finite(check_depth(loader.get_single_data()), origin)
    except JsonTooDeep:
        raise InputError(origin, f"refused: the YAML is nested more than {MAX_DEPTH} levels deep") from None
    except AliasBombError as exc:
        raise InputError(origin, f"refused: {exc}") from None
    except RefusedValue as exc:
        raise InputError(origin, f"refused: {yaml_problem(exc)}") from None
    except RecursionError:
        raise InputError(origin, "refused: the YAML is nested too deeply") from None
    except yaml.reader.ReaderError as exc:
        raise InputError(origin, unreadable_character(exc, text)) from None
    except yaml.YAMLError as exc:
        if "maximum nesting depth" in str(getattr(exc, "problem", "")):  # libyaml's own bound on nesting
            raise InputError(origin, "refused: the YAML is nested too deeply") from None
        raise InputError(origin, f"not valid YAML: {yaml_problem(exc)}") from None
    finally:
        loader.dispose()
