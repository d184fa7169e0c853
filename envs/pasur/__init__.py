"""Pâsur (docs/rules.md §2): the engine in :mod:`.rules`, the AEC environment in :mod:`.env`."""

from .env import env, raw_env
from .rules import PasurGame, PasurState

__all__ = ["env", "raw_env", "PasurGame", "PasurState"]
