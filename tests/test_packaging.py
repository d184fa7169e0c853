"""Packaging: the built wheel holds every package of the tree and the shipped data, and nothing in the
checkout can shadow an installed kahve (the suite once passed only with ``pip install -e``)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.helpers import HANG_S

ROOT = Path(__file__).resolve().parents[1]


def tree_packages() -> set[str]:
    spec = importlib.util.spec_from_file_location("kahve_setup", ROOT / "setup.py")
    setup = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(setup)     # defines packages() without calling setup()
    return set(setup.packages(ROOT))


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> zipfile.ZipFile:
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(out), str(ROOT)], capture_output=True, text=True, timeout=HANG_S)
    assert r.returncode == 0, r.stderr[-2000:]
    (path,) = out.glob("kahve-*.whl")
    return zipfile.ZipFile(path)


def test_every_folder_with_an_init_is_a_package_of_the_tree():
    found = tree_packages()
    for folder in ("envs", "agents", "scripts", "configs", "checkpoints"):
        for init in (ROOT / folder).rglob("__init__.py"):
            assert "kahve." + ".".join(init.parent.relative_to(ROOT).parts) in found
    assert {"kahve.agents.policies.heuristics", "kahve.agents.training", "kahve.agents.evaluation",
            "kahve.envs.core"} <= found


def test_the_wheel_holds_every_package_and_the_shipped_data(wheel):
    names = wheel.namelist()
    in_wheel = {n.rsplit("/", 1)[0].replace("/", ".") for n in names if n.endswith("/__init__.py")}
    assert in_wheel == tree_packages()
    for data in ("kahve/configs/pishti/ppo.yaml", "kahve/checkpoints/pishti/ppo_2p.onnx",
                 "kahve/checkpoints/pasur/ppo.md", "kahve/envs/pishti/guide.md",
                 "kahve/scripts/web/static/index.html", "kahve/scripts/web/static/app.js",
                 # PEP 561 markers, one per package of the namespace (no kahve/__init__.py to hold one)
                 "kahve/envs/py.typed", "kahve/agents/py.typed", "kahve/scripts/py.typed"):
        assert data in names
    # every shipped config and bot, by the names `kahve configs` and Bot.load take
    from kahve import checkpoints, configs
    assert {f"kahve/configs/{name}.yaml" for name in configs.names()} <= set(names)
    assert {f"kahve/checkpoints/{name}.onnx" for name in checkpoints.names()} <= set(names)
    # kahve itself is a namespace package: no kahve/__init__.py anywhere, so no root folder shadows the wheel
    assert "kahve/__init__.py" not in names
    assert not (ROOT / "kahve").exists()
    assert not any(n.startswith(("kahve/tests/", "kahve/tools/", "tests/", "tools/")) for n in names)
