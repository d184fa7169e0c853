"""Shipped training configs, one folder per game (package data: ``kahve.configs``).

A shipped config is named like its path under this folder: ``pishti/ppo`` (also ``pishti/ppo.yaml`` or
``configs/pishti/ppo.yaml``). ``kahve train`` and ``kahve configs`` take those names from any working directory,
so a plain (non-editable) install finds them too.
"""

from __future__ import annotations

import difflib
from pathlib import Path

ROOT = Path(__file__).parent


def names() -> list[str]:
    """Every shipped config's name, ``game/name``, sorted."""
    return sorted(p.relative_to(ROOT).with_suffix("").as_posix() for p in ROOT.glob("*/*.yaml"))


def find(name: str) -> Path | None:
    """A shipped config by path-like name: ``pishti/ppo``, ``pishti/ppo.yaml`` or ``configs/pishti/ppo.yaml``."""
    rel = name[len("configs/"):] if name.startswith("configs/") else name
    path = ROOT / (rel if rel.endswith(".yaml") else rel + ".yaml")
    return path if path.is_file() else None


def resolve(name: str) -> tuple[Path, bool]:
    """The config file ``name`` means, and whether it is a shipped one: a file that exists (relative to the
    working directory) wins, as ``kahve train`` has always read it; else the shipped config of that name. Neither
    is a one-line ``FileNotFoundError`` that names the closest shipped configs."""
    path = Path(name).expanduser()
    if path.is_file():
        return path, False
    shipped = find(str(name))
    if shipped is not None:
        return shipped, True
    raise FileNotFoundError(f"no config file {name!r} here and no shipped config of that name; "
                            + did_you_mean(str(name)))


def did_you_mean(name: str) -> str:
    """The shipped configs closest to ``name`` (e.g. a misspelt game or algorithm), else the list of all."""
    key = name[len("configs/"):] if name.startswith("configs/") else name
    key = key[:-len(".yaml")] if key.endswith(".yaml") else key
    close = difflib.get_close_matches(key, names(), n=3, cutoff=0.6)
    if close:
        return f"did you mean {_either(close)}? (kahve configs lists them all)"
    return "shipped configs: " + ", ".join(names())


def summary(path: Path) -> str:
    """The first sentence of a config's header comment (the comment lines before the first key): what it trains."""
    header = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        header.append(line.lstrip("#").strip())
    text = " ".join(header)
    end = text.find(". ")
    return text[:end + 1] if end >= 0 else text


def _either(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " or " + names[-1]
