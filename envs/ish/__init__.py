"""Ish (docs/rules.md §5): the engine in :mod:`.rules`, the AEC environment in :mod:`.env`."""

from .env import env, raw_env
from .rules import IshGame, IshState

__all__ = ["env", "raw_env", "IshGame", "IshState"]
