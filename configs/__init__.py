"""Shipped training configs, one folder per game (package data: ``kahve.configs``)."""

from pathlib import Path

ROOT = Path(__file__).parent


def find(name: str) -> Path | None:
    """A shipped config by path-like name: ``pishti/ppo``, ``pishti/ppo.yaml`` or ``configs/pishti/ppo.yaml``."""
    rel = name[len("configs/"):] if name.startswith("configs/") else name
    path = ROOT / (rel if rel.endswith(".yaml") else rel + ".yaml")
    return path if path.is_file() else None
