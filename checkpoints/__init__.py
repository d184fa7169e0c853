"""Shipped bots, one folder per game, each with its report (package data: ``kahve.checkpoints``)."""

from pathlib import Path

ROOT = Path(__file__).parent


def find(name: str) -> Path | None:
    """A shipped bot by path-like name: ``pishti/ppo``, ``pishti/ppo.onnx`` or ``checkpoints/pishti/ppo.onnx``."""
    rel = name[len("checkpoints/"):] if name.startswith("checkpoints/") else name
    path = ROOT / (rel if rel.endswith(".onnx") else rel + ".onnx")
    return path if path.is_file() else None
