"""What all games share: cards, settings validation, the engine protocol and the one AEC adapter."""

from .engine import Game, IllegalActionError, State
from .settings import Settings, SettingsSpec

__all__ = ["Game", "IllegalActionError", "State", "Settings", "SettingsSpec"]
