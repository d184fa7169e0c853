"""The layers of docs/architecture.md, checked on the source: nothing imports against the arrows."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"envs": "kahve.envs", "agents": "kahve.agents", "scripts": "kahve.scripts"}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    parts[0] = FOLDERS[parts[0]]
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports_of(path: Path) -> set[str]:
    """Every module ``path`` imports, relative imports resolved, lazy (in-function) imports included."""
    here = module_name(path).split(".")
    package = here if path.name == "__init__.py" else here[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package[:len(package) - node.level + 1] if node.level else []
            name = ".".join([*base, node.module] if node.module else base)
            found.add(name)
            found.update(f"{name}.{alias.name}" for alias in node.names)
    return found


SOURCES = sorted(p for folder in FOLDERS for p in (ROOT / folder).rglob("*.py"))


@pytest.mark.parametrize("path", SOURCES, ids=[str(p.relative_to(ROOT)) for p in SOURCES])
def test_imports_follow_the_layers(path):
    name = module_name(path)
    found = imports_of(path)

    def uses(prefix):
        return sorted(m for m in found if m == prefix or m.startswith(prefix + "."))

    if name.startswith("kahve.envs"):
        assert not uses("kahve.agents") and not uses("kahve.scripts"), "envs imports upwards"
    if name.startswith("kahve.envs.") and name.endswith(".rules") or name in (
            "kahve.envs.core.engine", "kahve.envs.core.cards", "kahve.envs.core.settings", "kahve.envs.core.rng"):
        for lib in ("pettingzoo", "gymnasium", "torch"):
            assert not uses(lib), f"a rules engine imports {lib}"
    if name.startswith("kahve.agents"):
        assert not uses("kahve.scripts"), "agents imports the command line"
    if name.startswith("kahve.agents.policies"):
        assert not uses("kahve.agents.training") and not uses("kahve.agents.evaluation"), \
            "policies import training or evaluation (a bot must load without them)"
        assert not uses("stable_baselines3") and not uses("sb3_contrib")


def test_the_checker_sees_relative_and_lazy_imports():
    found = imports_of(ROOT / "agents" / "policies" / "specs.py")
    assert "kahve.agents.policies.base" in found          # `from .base import ...` at the top
    assert "kahve.agents.policies.ismcts" in found        # `from .ismcts import ...` inside a function


def module_graph() -> dict[str, set[str]]:
    """Which kahve modules each module of envs/ and agents/ imports (lazy imports included). ``from P import m``
    where ``P.m`` is a module is an edge to that module, not to the package ``P`` (loading ``P.m`` runs ``P``'s
    ``__init__`` first in any case, so only what the import names is a dependency)."""
    paths = {module_name(p): p for p in SOURCES if module_name(p).split(".")[1] in ("envs", "agents")}
    graph = {}
    for name, path in paths.items():
        found = imports_of(path)
        edges = {m for m in found if m in paths and m != name}
        # a package named only because a submodule of it was imported from it
        edges -= {p for p in edges if any(m.startswith(p + ".") and m in edges for m in found)
                  and not _names_more_than_modules(path, p, paths)}
        graph[name] = edges
    return graph


def _names_more_than_modules(path: Path, package: str, modules: dict) -> bool:
    """Whether ``path`` imports from ``package`` some name that is not a submodule (a function, a class...)."""
    here = module_name(path).split(".")
    base_of = here if path.name == "__init__.py" else here[:-1]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = base_of[:len(base_of) - node.level + 1] if node.level else []
            name = ".".join([*base, node.module] if node.module else base)
            if name == package and any(f"{name}.{a.name}" not in modules for a in node.names):
                return True
        elif isinstance(node, ast.Import) and any(a.name == package for a in node.names):
            return True
    return False


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The import circles of ``graph``: its strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circles_in_agents_and_envs():
    assert cycles(module_graph()) == []


def test_the_circle_finder_finds_a_circle_and_ignores_a_package_named_for_its_submodule():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
    graph = module_graph()
    # scripts aside, kahve.agents.training.recipe imports `from . import config as config_mod`: the edge is the
    # module, and the package kahve.agents.training (whose __init__ imports nothing) is not a dependency
    assert "kahve.agents.training.config" in graph["kahve.agents.training.recipe"]
    assert "kahve.agents.training" not in graph["kahve.agents.training.recipe"]
