"""Pişti (docs/rules.md §1): the engine in :mod:`.rules`, the AEC environment in :mod:`.env`."""

from .env import env, raw_env
from .rules import PishtiGame, PishtiState

__all__ = ["env", "raw_env", "PishtiGame", "PishtiState"]
