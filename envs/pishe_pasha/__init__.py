"""Pishe Pasha (docs/rules.md §4): the engine in :mod:`.rules`, the AEC environment in :mod:`.env`."""

from .env import env, raw_env
from .rules import PishePashaGame, PishePashaState

__all__ = ["env", "raw_env", "PishePashaGame", "PishePashaState"]
