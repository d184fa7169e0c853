"""Shipped bots, one folder per game, each with its report (package data: ``kahve.checkpoints``).

A shipped bot is named like its path under this folder: ``pishti/ppo_2p`` (also ``pishti/ppo_2p.onnx`` or
``checkpoints/pishti/ppo_2p.onnx``). :func:`find` is the one place that reads those names: the policy specs of
every command and ``kahve.agents.Bot.load`` go through it, from any working directory.
"""

from __future__ import annotations

import difflib
from pathlib import Path

ROOT = Path(__file__).parent


def names() -> list[str]:
    """Every shipped bot's name, ``game/name``, sorted."""
    return sorted(p.relative_to(ROOT).with_suffix("").as_posix() for p in ROOT.glob("*/*.onnx"))


def find(name: str) -> Path | None:
    """A shipped bot by path-like name: ``pishti/ppo``, ``pishti/ppo.onnx`` or ``checkpoints/pishti/ppo.onnx``."""
    rel = name[len("checkpoints/"):] if name.startswith("checkpoints/") else name
    path = ROOT / (rel if rel.endswith(".onnx") else rel + ".onnx")
    return path if path.is_file() else None


def did_you_mean(name: str) -> str:
    """The shipped bots closest to ``name``, else the list of all (for a one-line error)."""
    key = name[len("checkpoints/"):] if name.startswith("checkpoints/") else name
    key = key[:-len(".onnx")] if key.endswith(".onnx") else key
    close = difflib.get_close_matches(key, names(), n=3, cutoff=0.6)
    if not close:
        return "shipped bots: " + ", ".join(names())
    return "did you mean " + (close[0] if len(close) == 1 else ", ".join(close[:-1]) + " or " + close[-1]) + "?"
