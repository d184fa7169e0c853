"""The package list, generated from the tree: ``kahve.<folder>.<sub>...`` for every folder with an
``__init__.py`` under the mapped top-level folders, so a new subpackage can never be left out of the wheel
(tests/test_packaging.py builds the wheel and compares). Everything else is in pyproject.toml.

``kahve`` itself is a namespace package (no ``__init__.py``): with no root ``kahve/`` folder in the checkout,
nothing in the repository can shadow an installed wheel.
"""

from pathlib import Path

from setuptools import setup

#: import name kahve.<key> -> top-level folder (docs/design.md: the design card's layout)
FOLDERS = ("envs", "agents", "scripts", "configs", "checkpoints")


def packages(root: Path = Path(__file__).parent) -> list[str]:
    found = []
    for folder in FOLDERS:
        for init in sorted((root / folder).rglob("__init__.py")):
            found.append("kahve." + ".".join(init.parent.relative_to(root).parts))
    return found


if __name__ == "__main__":
    setup(packages=packages(), package_dir={f"kahve.{folder}": folder for folder in FOLDERS})
