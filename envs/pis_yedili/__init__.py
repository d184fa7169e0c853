"""Pis Yedili (docs/rules.md §3): the engine in :mod:`.rules`, the AEC environment in :mod:`.env`."""

from .env import env, raw_env
from .rules import PisYediliGame, PisYediliState

__all__ = ["env", "raw_env", "PisYediliGame", "PisYediliState"]
