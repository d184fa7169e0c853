"""Rule-based baselines, one module per game, each documented in its docstring.

A heuristic reads only what its seat may know: its own hand and the public table (the tests check this by
re-dealing the hidden cards and asking again). It receives the engine state because decoding the table from
the observation vector would only make the rules harder to read.
"""

from __future__ import annotations

import importlib

#: game -> the class of its heuristic, in the module of the same name
_CLASSES = {"pishti": "PishtiHeuristic", "pasur": "PasurHeuristic", "pis_yedili": "PisYediliHeuristic",
            "pishe_pasha": "PishePashaHeuristic", "ish": "IshHeuristic"}


def _player(classes: dict, what: str, game, seed: int | None, hint: str = ""):
    """The ``classes[game.name]`` player of ``game``, from the module of the game's name."""
    if game.name not in classes:
        raise ValueError(f"no {what} for game {game.name!r}{hint}")
    module = importlib.import_module(f"{__name__}.{game.name}")
    return getattr(module, classes[game.name])(game, seed)


def heuristic_for(game, seed: int | None = None):
    """The heuristic policy of ``game`` (a :class:`kahve.envs.core.Game`)."""
    return _player(_CLASSES, "heuristic", game, seed)


#: game -> the class of its plain greedy player (a yardstick; only where a report names one)
_GREEDY = {"pishti": "PishtiGreedy"}


def greedy_for(game, seed: int | None = None):
    """The greedy player of ``game`` (Pişti only: docs/search.md)."""
    return _player(_GREEDY, "greedy player", game, seed, f" (there is one for: {', '.join(_GREEDY)})")
