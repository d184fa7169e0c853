"""The five games as PettingZoo AEC environments, and their registry.

    from kahve import envs
    envs.GAMES                  # the game names
    env = envs.make("pishti", players=2, render_mode="ansi")
    game = envs.game_class("pishti")(players=2)   # the bare engine
"""

from __future__ import annotations

import importlib

from .core import Game, IllegalActionError
from .core.settings import short

GAMES = ("pasur", "pishti", "pis_yedili", "pishe_pasha", "ish")
# every game is imported here: an error inside one (a broken import in Pâsur's engine) surfaces as itself,
# never as "unknown game"
_modules = {name: importlib.import_module(f"{__name__}.{name}") for name in GAMES}
globals().update(_modules)

#: PettingZoo-style versioned ids, e.g. "kahve/pishti-v0" -> "pishti"
ENV_IDS = {_modules[n].raw_env.metadata["env_id"]: n for n in GAMES}


def _resolve(name: str) -> str:
    if not isinstance(name, str):
        raise ValueError(f"a game name must be a string, not {short(name)}; known games: {', '.join(GAMES)}")
    key = name.strip().lower().replace("-", "_")
    if key in _modules:
        return key
    if name in ENV_IDS:
        return ENV_IDS[name]
    aliases = {"pasur": "pasur", "pâsur": "pasur", "pişti": "pishti", "pisti": "pishti", "pis_yedili": "pis_yedili",
               "pishe_pasha": "pishe_pasha", "pisha_pasha": "pishe_pasha"}
    if key in aliases and aliases[key] in _modules:
        return aliases[key]
    raise ValueError(f"unknown game {short(name)}; known games: {', '.join(GAMES)}")


def make(name: str, **kwargs):
    """A game's AEC environment (wrapped like PettingZoo's ``env()``); kwargs are settings and render_mode."""
    return _modules[_resolve(name)].env(**kwargs)


def game_class(name: str) -> type[Game]:
    """The engine's :class:`~kahve.envs.core.Game` class of a game."""
    mod = _modules[_resolve(name)]
    return mod.raw_env.game_class


__all__ = ["GAMES", "ENV_IDS", "make", "game_class", "Game", "IllegalActionError", *GAMES]
