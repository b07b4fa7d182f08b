"""The layout rules that keep the code base easy to extend, checked so they stay true.

- No import cycles between modules or subpackages of ``m3d_agents``, ``debates``, ``retrieval`` and
  ``prompts``, counting imports inside functions too; and none either when the imports under
  ``if TYPE_CHECKING:`` (annotations only, never executed) are counted as well, so that no module
  knows, even by type, the module that builds on it.
- The front-ends never look inside a debate configuration: they ask any configuration what it
  offers (its seats, its turns), so ``debates.debate_engine.config`` and ``debates.debate_engine.protocol`` are not
  theirs to import.
- AutoGen's private modules are imported only by the group chat every strategy runs in (``debates/groupchat``).
- No module outside ``debates/strategies/debate/protocols`` branches on a protocol's name.
- No test module imports another test module; shared helpers live in ``tests/support``.
- ``debates`` is layered, and a module imports only its own layer or the layers below it:
  front-ends (``cli``, ``ui``) over the harness (``eval.papers`` over ``eval.run`` over
  ``eval.score``) over the strategies over the turn policies over the debate engine over the group
  chat over the kernel (``strategy``, ``config_loader``, ``session``, ``fidelity``, ``tool_settings``). The kernel imports no strategy; the
  strategies import no harness or front-end.
- No strategy imports another strategy's internals; what two strategies share lives below them
  (``debates/groupchat``, ``debates/debate_engine``, ``debates/turns``, ``m3d_agents/tools``) or in ``debates/strategies/checker.py``.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.support.paths import REPO

PACKAGES = ("m3d_agents", "debates", "retrieval", "prompts")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def source_files(*tops: str) -> dict[str, Path]:
    return {module_name(p): p for top in tops for p in sorted((REPO / top).rglob("*.py"))}


def is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports(tree: ast.AST, annotations: bool = False) -> list[tuple[str, list[str], int]]:
    """(module, imported names, level) for every import that runs, wherever it is; with ``annotations``,
    also those under ``if TYPE_CHECKING:``."""
    found: list[tuple[str, list[str], int]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and is_type_checking(node) and not annotations:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((alias.name, [], 0) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            found.append((node.module or "", [alias.name for alias in node.names], node.level))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def import_graph(modules: dict[str, Path], annotations: bool = False) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for target, names, level in imports(ast.parse(path.read_text(), str(path)), annotations):
            if level:
                base = package.split(".")
                base = base[: len(base) - level + 1]
                target = ".".join([*base, target] if target else base)
            candidates = [f"{target}.{n}" for n in names if f"{target}.{n}" in modules] or [target]
            for candidate in candidates:
                while candidate and candidate not in modules:
                    candidate = candidate.rpartition(".")[0]
                if candidate and candidate != name:
                    graph[name].add(candidate)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0

    def strongconnect(node: str) -> None:
        nonlocal counter
        index[node] = low[node] = counter
        counter += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                strongconnect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            strongconnect(node)
    return found


@pytest.mark.parametrize("annotations", [False, True], ids=["run-time imports", "with TYPE_CHECKING imports"])
def test_no_import_cycles_between_modules(annotations: bool) -> None:
    graph = import_graph(source_files(*PACKAGES), annotations)
    assert cycles(graph) == []


@pytest.mark.parametrize("annotations", [False, True], ids=["run-time imports", "with TYPE_CHECKING imports"])
def test_no_import_cycles_between_subpackages(annotations: bool) -> None:
    modules = source_files(*PACKAGES)
    graph = import_graph(modules, annotations)
    package_of = {name: (name if path.name == "__init__.py" else name.rpartition(".")[0]) for name, path in modules.items()}
    packages: dict[str, set[str]] = {p: set() for p in package_of.values()}
    for name, targets in graph.items():
        for target in targets:
            source_package, target_package = package_of[name], package_of[target]
            # A package importing its own subpackage (to register built-ins) is containment, not a cycle.
            if source_package != target_package and not target_package.startswith(source_package + "."):
                packages[source_package].add(target_package)
    assert cycles(packages) == []


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_a_type_checking_import_counts_only_when_asked() -> None:
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from a import B\nimport c\n")
    assert [m for m, _, _ in imports(tree)] == ["typing", "c"]
    assert [m for m, _, _ in imports(tree, annotations=True)] == ["typing", "a", "c"]


DEBATE_CONFIGURATION_TYPES = ("debates.debate_engine.config", "debates.debate_engine.protocol")


def test_front_ends_do_not_look_inside_debate_configurations() -> None:
    graph = import_graph(source_files("debates"), annotations=True)
    offenders = [
        f"{name} -> {target}" for name, targets in graph.items() for target in targets
        if layer_of(name) == 0 and target in DEBATE_CONFIGURATION_TYPES
    ]
    assert offenders == []


def test_autogen_private_modules_are_used_only_by_the_group_chat() -> None:
    private = re.compile(r"^\s*(from|import)\s+autogen_\w+(\.\w+)*\._", re.MULTILINE)
    offenders = [
        name for name, path in source_files(*PACKAGES).items()
        if private.search(path.read_text()) and not name.startswith("debates.groupchat.")
    ]
    assert offenders == []


def test_only_protocol_modules_branch_on_a_protocol_name() -> None:
    branch = re.compile(r"\bprotocol\s*(==|!=|\bin\b|\bnot in\b)\s*[\"'(\[{]")
    offenders = [
        name for name, path in source_files(*PACKAGES).items()
        if branch.search(path.read_text()) and not name.startswith("debates.strategies.debate.protocols")
    ]
    assert offenders == []


def test_no_test_module_imports_another_test_module() -> None:
    offenders = []
    for name, path in source_files("tests").items():
        for target, names, _ in imports(ast.parse(path.read_text())):
            for full in [target, *(f"{target}.{n}" for n in names)]:
                if full.startswith("tests.") and full.rpartition(".")[2].startswith("test_") and not full.startswith("tests.support"):
                    offenders.append(f"{name} -> {full}")
    assert offenders == []


LAYERS = (
    ("front-end", ("debates.cli", "debates.ui", "debates.__main__")),
    ("papers", ("debates.eval.papers",)),
    ("run", ("debates.eval.run",)),
    ("score", ("debates.eval.score", "debates.eval")),
    ("strategies", ("debates.strategies",)),
    ("turns", ("debates.turns",)),
    ("debate engine", ("debates.debate_engine",)),
    ("group chat", ("debates.groupchat",)),
    ("kernel", ("debates.strategy", "debates.config_loader", "debates.session", "debates.fidelity", "debates.tool_settings")),
)
"""Top to bottom. The package ``debates`` itself (its ``__init__``) only registers the built-ins."""

SHARED_BY_STRATEGIES = {"debates.strategies", "debates.strategies.checker", "debates.strategies.builtin", "debates.strategies.configs",
                        "debates.strategies.diagnostics"}


def layer_of(module: str) -> int | None:
    for rank, (_, prefixes) in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return None


def strategy_unit(module: str) -> str | None:
    """The strategy a module belongs to (``debate``, ``t2agent``, ``check`` ...), None for shared modules."""
    if module in SHARED_BY_STRATEGIES or not module.startswith("debates.strategies."):
        return None
    return module.split(".")[2]


def test_debates_layers_import_only_downward() -> None:
    graph = import_graph(source_files("debates"))
    upward = [
        f"{name} -> {target}"
        for name, targets in graph.items() for target in targets
        if (a := layer_of(name)) is not None and (b := layer_of(target)) is not None and b < a
    ]
    assert upward == []


def test_the_kernel_imports_no_strategy_and_the_strategies_no_harness() -> None:
    graph = import_graph(source_files("debates"))
    kernel = LAYERS[-1][1]
    offenders = [
        f"{name} -> {target}" for name, targets in graph.items() for target in targets
        if (name in kernel and target.startswith("debates.strategies"))
        or (name.startswith("debates.strategies") and target.startswith(("debates.eval", "debates.cli", "debates.ui")))
    ]
    assert offenders == []


def test_no_strategy_imports_another_strategys_internals() -> None:
    graph = import_graph(source_files("debates"))
    offenders = [
        f"{name} -> {target}" for name, targets in graph.items() for target in targets
        if (own := strategy_unit(name)) and (other := strategy_unit(target)) and own != other
    ]
    assert offenders == []


def test_the_layer_rules_catch_an_upward_import() -> None:
    assert layer_of("debates.groupchat.team") is not None and layer_of("debates.eval.run.batch") is not None
    assert layer_of("debates.eval.run.batch") < layer_of("debates.groupchat.team")  # type: ignore[operator]
    assert strategy_unit("debates.strategies.t2agent.tree") == "t2agent"
    assert strategy_unit("debates.strategies.checker") is None
