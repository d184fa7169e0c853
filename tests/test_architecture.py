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
