"""Frozen reference implementations that the engine's fast code is tested against, bit for bit."""
